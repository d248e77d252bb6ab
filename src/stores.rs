//! The stores icbench measures, declared once: per store its `--stores` name, its labels, the
//! canister module it lives in, its Candid method stem, what it supports (journal modes,
//! schemas, how it survives an upgrade, which suites measure it), its memory per row and
//! fill cost for the pre-flight estimates, and its plot colour. The suites ask this table
//! instead of matching on stores: a new store is the canister code plus one entry in
//! `ROWS`.
//!
//! Here: the table and the record-level label and parse-back; `stores/kind.rs` the values
//! that name a row ([`StoreKind`], [`Store`]: a row and its journal mode), `stores/memory.rs`
//! the memory figures, `stores/layout.rs` where a run fills them (a canister each, or seed
//! 003's one per module), `stores/schema.rs` the schemas of dbbench, keys and sysbench,
//! `stores/setup.rs` setting a store up on a canister (SQLite's journal mode, in one place),
//! `stores/modules.rs` the canister modules a run holds.

use anyhow::Result;

// Names compared in const context (the lookups that name a row).
use crate::bench_canister::{BenchClient, Module, Stats};
use crate::engine::cost::WASM_PAGE_SIZE;
use crate::engine::same_str as same;
use bench_types::names::{self, DbBenchStore, HeapEncoding, KeysStore, SysbenchStore};

mod kind;
mod layout;
mod memory;
mod modules;
mod schema;
mod setup;

pub use bench_types::JournalMode;
pub use kind::{Store, StoreKind};
pub use layout::Layout;
pub use memory::{Memory, UpgradeMemory};
pub use modules::{
    check_module, module_name, needs, read_module, refuse_named_twice, required_exports,
    wasm_flag_value, GivenModule, ModuleFile, ModuleNeed, Modules,
};
pub use schema::{Schema, SchemaStore};
pub use setup::{journal_mode_config, reopen_sqlite, set_journal_mode, settle_collector};

/// One store: a row of [`TABLE`].
#[derive(Clone, Copy, Debug)]
pub struct StoreDef {
    /// Its name: the `--stores` value (a tune variant's: its `--tune-variants` value).
    pub name: &'static str,
    /// How a run selects it.
    pub selected_by: SelectedBy,
    /// The canister module it lives in.
    pub module: Module,
    /// Its Candid method stem: `add_users_{stem}`, `get_users_{stem}_ids`, `scan_users_{stem}`.
    pub stem: &'static str,
    /// The records' `store` column.
    pub record: &'static str,
    /// What older versions wrote in the `store` column for it: their results.json still
    /// parse as this store.
    pub formerly: &'static [&'static str],
    /// Its label in tables and plots; a store with journal modes is followed by the mode.
    pub label: &'static str,
    /// Its label in narrow tables; a store with journal modes is named by its mode alone.
    pub short_label: &'static str,
    /// How prose names it: `the heap map`.
    pub noun: &'static str,
    /// Whether it is measured once per SQLite journal mode (set by `configure_sqlite` on a
    /// fresh connection, the canister's default read from `stats`).
    pub journal_modes: bool,
    /// The SQLite settings its binding fixes, which no flag can choose (each refused with
    /// its reason before any work).
    pub fixed: &'static [Fixed],
    /// Whether it answers SQL (sysbench's workloads beyond the key-value ones).
    pub sql: bool,
    /// Whether it keeps a page cache on the heap across messages (SQLite's): its cost then
    /// depends on the cache's state, and the users suites measure it cold (a newly opened
    /// connection) and warm (a live canister's: see docs/suites.md). A store without one has
    /// one state, measured once.
    pub page_cache: bool,
    /// How its rows survive an upgrade.
    pub on_upgrade: OnUpgrade,
    /// Whether its rows live on the Wasm heap between upgrades (their heap bytes per row then
    /// bound an insert, as the heap room does).
    pub rows_on_heap: bool,
    /// How the users suites fill it.
    pub prefill: Prefill,
    /// Whether its canister's runtime collects garbage after update messages (Motoko's
    /// incremental collector): a message then pays for an increment when a collection is
    /// under way or due, and a filled canister is sent empty messages until none is, before
    /// its snapshot, so that every scenario starts with the collector idle.
    pub collected: bool,
    /// The suites that measure it (`--suite` names); a store with a page cache is measured
    /// by the cache suite too ([`StoreKind::suites`]).
    pub suites: &'static [&'static str],
    /// Its schemas in the suites that measure schemas (dbbench, keys, sysbench).
    pub schemas: &'static [Schema],
    /// What it needs of the machine, and what its fill costs.
    pub memory: Memory,
    /// Its palette slot (`report::svg::SLOTS`), the same in every plot of every suite; a
    /// store with journal modes takes this slot and one more per mode, in mode order.
    pub colour: Option<usize>,
    /// The stable bytes its rows take, from its own size (not the canister's stable memory,
    /// which the memory manager grows in 8 MiB buckets the stores share).
    pub stable_bytes: fn(&Stats) -> u64,
    /// The rows it holds, as the canister counts them.
    pub rows: fn(&mut BenchClient<'_>) -> Result<u64>,
    /// A variant of another module's store: that store's name (its calls, shape and memory).
    pub variant_of: Option<&'static str>,
    /// The largest value (payload) its value type holds, if bounded.
    pub max_value_size: Option<u64>,
    /// The smallest value (payload) it holds: 0 but where an empty value fails.
    pub min_value_size: u64,
}

/// A SQLite setting a store's binding fixes: its pragma's name, the value it keeps, and why
/// no other can be chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixed {
    pub setting: &'static str,
    pub value: &'static str,
    pub why: &'static str,
}

/// How a run selects a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectedBy {
    /// A `--stores` value, with its line in `--help`.
    Stores { help: &'static str },
    /// A `--tune-variants` value (a store of the tune variant module).
    TuneVariants,
}

/// How a store's rows survive an upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnUpgrade {
    /// In place (stable memory): the upgrade's work does not grow with the rows.
    InPlace,
    /// Serialized by `pre_upgrade` into stable memory and read back by `post_upgrade`, in
    /// any of these encodings (`configure_heap`): the upgrade suite measures each.
    Serialized(&'static [Encoding]),
    /// Serialized by the language's runtime, in its one encoding: Motoko's classical
    /// persistence writes the actor's stable fields to stable memory in `pre_upgrade` and
    /// reads them back in `post_upgrade`. The upgrade's work grows with the rows.
    ByRuntime,
}

/// An encoding a serialized store is upgraded with, and its label in the upgrade suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    pub encoding: HeapEncoding,
    pub label: &'static str,
}

/// How the users suites fill a store in the seed's layout (`--layout shared`, one canister per
/// module); alone, every store is its canister's only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefill {
    /// In the shared prefill of its module's canister: its scenarios start from that
    /// canister's post-prefill snapshot (after setting its journal mode, for a store that
    /// has them; a SQLite store without them on a newly opened connection), which the cache
    /// keeps.
    Shared,
    /// After the post-prefill snapshot, its scenarios from a snapshot of its own: its
    /// allocations (tens of thousands of strings on the heap) would change where the other
    /// stores' allocations land and so what malloc costs (up to 7% at 20,000 rows).
    Alone,
}

/// The modules' stores, in the order reports show them: `--stores`' values first (its
/// possible values and defaults, in this order), then the tune variant's.
const ROWS: [StoreDef; 11] = [
    HEAP,
    BTREE,
    SQLITE,
    SQLITE_VFS,
    MO_MAP,
    MO_PURE_MAP,
    MO_REGION,
    MO_MAP_CLASSIC,
    HEAP_TALC,
    BTREE_TALC,
    BTREE_BOUNDED,
];

/// Every store, at one address (`ROWS` is for lookups at compile time).
pub static TABLE: [StoreDef; ROWS.len()] = ROWS;

/// The suites that measure every store of the default module.
const EVERY_SUITE: &[&str] = &[
    "seed003",
    "lookups",
    "sustained",
    "dbbench",
    "keys",
    "sysbench",
    "upgrade",
    "scaling",
    "tune",
];

/// The suites that measure a store without schemas: every suite but those of schemas
/// (dbbench, keys and sysbench).
const SCHEMALESS_SUITES: &[&str] = &[
    "seed003",
    "lookups",
    "sustained",
    "upgrade",
    "scaling",
    "tune",
];

const HEAP: StoreDef = StoreDef {
    name: names::HEAP,
    selected_by: SelectedBy::Stores {
        help: "A `std::collections::BTreeMap` on the Wasm heap, saved to stable memory only \
               across upgrades",
    },
    module: Module::DEFAULT,
    stem: names::HEAP,
    record: names::HEAP,
    formerly: &[],
    label: "heap BTreeMap",
    short_label: "Heap",
    noun: "the heap map",
    journal_modes: false,
    fixed: &[],
    sql: false,
    page_cache: false,
    on_upgrade: OnUpgrade::Serialized(&[
        Encoding {
            encoding: HeapEncoding::Candid,
            label: "heap (Candid)",
        },
        Encoding {
            encoding: HeapEncoding::Cbor,
            label: "heap (CBOR)",
        },
    ]),
    rows_on_heap: true,
    prefill: Prefill::Alone,
    collected: false,
    suites: SCHEMALESS_SUITES,
    schemas: &[],
    memory: Memory {
        users_tenths: 30,
        users_tenths_per_mode: 0,
        upgrade: UpgradeMemory {
            upgrade_tenths: 77,
            held_tenths: 15,
            overhead: 20,
        },
        scaling_per_row: 350,
        scaling_cap: 0,
        capacity_search: 2_200_000_000,
        fill_cost: 1,
    },
    // It came after SQLite's journal modes and took the slot after OFF, so that the other
    // stores kept their colours.
    colour: Some(7),
    stable_bytes: |_| 0,
    rows: |client| Ok(client.heap_stats()?.rows),
    variant_of: None,
    max_value_size: None,
    min_value_size: 0,
};

const BTREE: StoreDef = StoreDef {
    name: names::BTREE,
    selected_by: SelectedBy::Stores {
        help: "ic-stable-structures' StableBTreeMap",
    },
    module: Module::DEFAULT,
    stem: names::BTREE,
    record: names::BTREE,
    formerly: &[],
    label: "StableBTreeMap",
    short_label: "BTreeMap",
    noun: "the StableBTreeMap",
    journal_modes: false,
    fixed: &[],
    sql: false,
    page_cache: false,
    on_upgrade: OnUpgrade::InPlace,
    rows_on_heap: false,
    prefill: Prefill::Shared,
    collected: false,
    suites: EVERY_SUITE,
    schemas: &[Schema {
        record: names::BTREE,
        label: "",
        described: "StableBTreeMap<[u8; 16], Vec<u8>>",
        canister: &[
            ("dbbench", DbBenchStore::BTree.name()),
            ("keys", KeysStore::BTree.name()),
            ("sysbench", SysbenchStore::BTree.name()),
        ],
        colour: None,
    }],
    memory: Memory {
        users_tenths: 20,
        users_tenths_per_mode: 0,
        upgrade: UpgradeMemory {
            upgrade_tenths: 20,
            held_tenths: 20,
            overhead: 50,
        },
        scaling_per_row: 210,
        scaling_cap: 0,
        capacity_search: 600_000_000,
        fill_cost: 3,
    },
    colour: Some(0),
    // A module older than the field: the canister's stable memory, as before it.
    stable_bytes: |stats| stats.btree_stable_pages.unwrap_or(stats.stable_pages) * WASM_PAGE_SIZE,
    rows: |client| Ok(client.stats()?.btree_rows),
    variant_of: None,
    max_value_size: None,
    min_value_size: 0,
};

const SQLITE: StoreDef = StoreDef {
    name: names::SQLITE,
    selected_by: SelectedBy::Stores {
        help: "SQLite (ic-rusqlite); each suite says in which journal modes or schemas",
    },
    module: Module::DEFAULT,
    stem: names::SQLITE,
    record: names::SQLITE,
    formerly: &[],
    label: "SQLite",
    short_label: "SQLite",
    noun: "SQLite",
    journal_modes: true,
    fixed: &[],
    sql: true,
    page_cache: true,
    on_upgrade: OnUpgrade::InPlace,
    rows_on_heap: false,
    prefill: Prefill::Shared,
    collected: false,
    // Every suite, and the cache suite's sweep of its page cache.
    suites: EVERY_SUITE,
    schemas: &[
        // `key BLOB, value BLOB, PRIMARY KEY(key)`: a rowid table plus an index on the key
        // (for a u64 key, INTEGER PRIMARY KEY is the rowid: one B-tree). The records name
        // it `sqlite`, as the other suites name SQLite.
        Schema {
            record: names::SQLITE,
            label: "rowid",
            described: "rowid table",
            canister: &[
                ("dbbench", DbBenchStore::SqliteRowid.name()),
                ("keys", KeysStore::SqliteRowid.name()),
                ("sysbench", SysbenchStore::Sqlite.name()),
            ],
            colour: None,
        },
        // The same `WITHOUT ROWID`: one B-tree keyed by the key (db_bench_sqlite3's default).
        Schema {
            record: "sqlite_without_rowid",
            label: "WITHOUT ROWID",
            described: "WITHOUT ROWID",
            canister: &[
                ("dbbench", DbBenchStore::SqliteWithoutRowid.name()),
                ("keys", KeysStore::SqliteWithoutRowid.name()),
            ],
            colour: Some(8),
        },
        // An implicit rowid and a secondary index on the key.
        Schema {
            record: "sqlite_secondary",
            label: "secondary index",
            described: "secondary index",
            canister: &[("keys", KeysStore::SqliteSecondary.name())],
            colour: Some(9),
        },
    ],
    memory: Memory {
        users_tenths: 22,
        users_tenths_per_mode: 8,
        upgrade: UpgradeMemory {
            upgrade_tenths: 30,
            held_tenths: 22,
            overhead: 50,
        },
        scaling_per_row: 380,
        scaling_cap: 0,
        capacity_search: 600_000_000,
        fill_cost: 2,
    },
    colour: Some(1),
    stable_bytes: |stats| stats.sqlite_page_count * stats.sqlite_page_size,
    rows: |client| Ok(client.stats()?.sqlite_rows),
    variant_of: None,
    max_value_size: None,
    min_value_size: 0,
};

/// SQLite on the other binding, ic-sqlite-vfs, in a canister of its own
/// (canisters/sqlite-vfs): its pages at fixed offsets of one stable virtual memory, the
/// rollback journal in heap memory, page_size 16,384. Measured on a newly opened connection,
/// as the bench canister's SQLite is in each journal mode.
const SQLITE_VFS: StoreDef = StoreDef {
    name: "sqlite-vfs",
    selected_by: SelectedBy::Stores {
        help: "SQLite on the other binding, ic-sqlite-vfs (a canister of its own; its journal is \
               in heap memory, so no journal modes)",
    },
    module: Module::SQLITE_VFS,
    stem: "sqlite_vfs",
    // Its --stores name, as in scenario ids and --profile patterns; the Candid stem keeps
    // the `_` of a method name.
    record: "sqlite-vfs",
    formerly: &["sqlite_vfs"],
    label: "SQLite (ic-sqlite-vfs)",
    short_label: "ic-sqlite-vfs",
    noun: "SQLite on ic-sqlite-vfs",
    journal_modes: false,
    fixed: &[
        Fixed {
            setting: "journal_mode",
            value: "MEMORY",
            why: "ic-sqlite-vfs keeps its rollback journal in heap memory (journal_mode MEMORY \
                  on every update connection) and has no WAL (its SQLite is built with \
                  SQLITE_OMIT_WAL)",
        },
        Fixed {
            setting: "page_size",
            value: "16384",
            why: "ic-sqlite-vfs sets page_size 16384 itself on an empty image (its VFS's sector \
                  and commit unit), and a later change needs VACUUM, which cannot run inside \
                  its update transaction",
        },
        Fixed {
            setting: "synchronous",
            value: "OFF",
            why: "ic-sqlite-vfs sets synchronous OFF on every update connection: a message's \
                  writes reach stable memory at COMMIT and its VFS's xSync does nothing, so \
                  there is nothing to sync",
        },
        Fixed {
            setting: "locking_mode",
            value: "EXCLUSIVE",
            why: "ic-sqlite-vfs sets locking_mode EXCLUSIVE on every connection (one canister, \
                  one writer)",
        },
    ],
    // The suites that make a canister per module (the users suites, the cache suite's sweep
    // over the warm-ups, upgrade, scaling) and tune, which searches its settings in a
    // canister of its own (suites/tune/binding.rs); dbbench, keys and sysbench send their
    // SQL to the bench canister's methods (docs/suites.md).
    suites: SCHEMALESS_SUITES,
    schemas: &[],
    // Its file at 1,000,000 rows of 100 bytes is 122 MB of stable memory (16 KiB pages,
    // 126 MB with the memory manager's buckets); its heap, after the default run's largest
    // message (10,000 rows at random: every page it writes staged on the heap until
    // COMMIT), 270 MB, which a Wasm heap keeps: 396 bytes a row, 27 tenths of 150
    // (`what_each_binding_holds_at_a_million_rows` in tests/it/sqlite_vfs/at_scale.rs
    // measures them). The upgrade and scaling figures from this store run alone
    // (`--stores sqlite-vfs --jobs 1`, `scripts/memory-peak.py`, 2026-11-26, see
    // `stores/memory.rs`): `--suite upgrade` to 1,000,000 rows peaked at 0.27 GB of
    // footprint (its 122 MB file shared with the snapshots, a 67 MB heap after the fill
    // frozen for the rollback beside post_upgrade's new one: 14 and 13 tenths of 150);
    // `--suite scaling` to 10,000,000 rows at 1.34 GB (a 1.1 GB file, a heap that stays
    // at 67 MB: its cache is capped at 32 MiB; 135 a row), its capacity search at
    // 1,000,000 rows (an insert of 2,900,000 rows, its pages staged on the heap until
    // COMMIT) at 1.07 GB; its fill took 11.0 s of CPU for 10,000,000 rows, as SQLite's
    // does on ic-rusqlite (2).
    memory: Memory {
        users_tenths: 27,
        users_tenths_per_mode: 0,
        upgrade: UpgradeMemory {
            upgrade_tenths: 14,
            held_tenths: 13,
            overhead: 50,
        },
        scaling_per_row: 135,
        scaling_cap: 0,
        capacity_search: 1_000_000_000,
        fill_cost: 2,
    },
    colour: Some(10),
    // An SQL store with a page cache, upgraded in place, its size and rows SQLite's.
    ..SQLITE
};

/// The Motoko canister's stores (canisters/motoko, built by moc): a persistent actor under
/// enhanced orthogonal persistence, whose heap is kept across upgrades (nothing is
/// serialized) and tended by the incremental collector. Each row's value is a Text of its
/// own, as a decoded argument would be. Each store gives its labels, memory, colour and
/// row count over this.
const MOTOKO: StoreDef = StoreDef {
    name: "",
    selected_by: SelectedBy::Stores { help: "" },
    module: Module::MOTOKO,
    stem: "",
    record: "",
    formerly: &[],
    label: "",
    short_label: "",
    noun: "",
    journal_modes: false,
    fixed: &[],
    sql: false,
    page_cache: false,
    // The heap is kept as it is: the upgrade's work does not grow with the rows.
    on_upgrade: OnUpgrade::InPlace,
    rows_on_heap: true,
    prefill: Prefill::Shared,
    collected: true,
    suites: &["seed003", "lookups", "sustained", "upgrade", "scaling"],
    schemas: &[],
    memory: motoko_memory(0, (0, 0), 0, 0, 0),
    colour: None,
    // A map's rows are on the heap.
    stable_bytes: |_| 0,
    rows: |_| Ok(0),
    variant_of: None,
    max_value_size: None,
    min_value_size: 0,
};

/// A Motoko store's memory figures (see [`Memory`]), from runs of 2026-11-26:
/// - users: each alone (`--stores NAME`, an empty cache) the default run peaked at 1.05 GB
///   (mo-map: a 537 MiB Wasm memory at 1,000,000 rows), 2.83 GB (mo-pure-map, whose fill
///   leaves the most garbage) and 0.67 GB (mo-region), the heap map's at 0.29 GB; all
///   twelve stores together at 3.9 GB, 1.95 GB above the Rust stores' run, as the
///   canisters' peaks do not coincide. 40, 120 and 25 tenths of 150 bytes a row keep the
///   default run's estimate (5.5 GB) above its peak; mo-pure-map alone peaks 0.5 GB above
///   its own (2.3 GB);
/// - upgrade, in tenths of 150 bytes a row: its heap at 1,000,000 rows (mo-map 537 MiB,
///   mo-pure-map 1.44 GiB, mo-region 384 MiB) held by its snapshot while it waits, and
///   about twice that while it is upgraded (the heap kept, and frozen for the rollback); the
///   three to 1,000,000 rows (`--suite upgrade`) peaked at 4.76 GB;
/// - scaling: alone to 10,000,000 rows (`--jobs 1`) mo-map peaked at 8.9 GB, mo-region at
///   6.1 GB, mo-pure-map at 6.2 GB (stopped short by wasm_memory_limit), which the caps
///   cover;
/// - the capacity search's largest insert grows the heap up to wasm_memory_limit (3 GiB);
/// - fill cost: instructions per row of the fill with the collector's (mo-map 22.8B for
///   1,000,000 rows, mo-pure-map 67B, the longest of all, mo-region 19B).
const fn motoko_memory(
    users_tenths: u64,
    (upgrade_tenths, held_tenths): (u64, u64),
    scaling_per_row: u64,
    scaling_cap: u64,
    fill_cost: i64,
) -> Memory {
    Memory {
        users_tenths,
        users_tenths_per_mode: 0,
        upgrade: UpgradeMemory {
            upgrade_tenths,
            held_tenths,
            overhead: 50,
        },
        scaling_per_row,
        scaling_cap,
        capacity_search: 3_000_000_000,
        fill_cost,
    }
}

/// A store of the Motoko canister: its name (its record's too), method stem, `--stores`
/// help, label, short label and noun, memory, colour and row count over [`MOTOKO`].
const fn motoko_store(
    name: &'static str,
    stem: &'static str,
    help: &'static str,
    (label, short_label, noun): (&'static str, &'static str, &'static str),
    memory: Memory,
    colour: usize,
    rows: fn(&mut BenchClient<'_>) -> Result<u64>,
) -> StoreDef {
    StoreDef {
        name,
        selected_by: SelectedBy::Stores { help },
        stem,
        record: name,
        label,
        short_label,
        noun,
        memory,
        colour: Some(colour),
        rows,
        ..MOTOKO
    }
}

/// mo:core's `Map<Nat64, Text>`: a B-tree of mutable nodes on the heap.
const MO_MAP: StoreDef = motoko_store(
    "mo-map",
    "mo_map",
    "Motoko: mo:core's Map (a B-tree on the 64-bit persistent heap), a canister of its own",
    ("Motoko Map", "mo Map", "mo:core's Map"),
    motoko_memory(40, (75, 40), 1_200, 9_500_000_000, 3),
    11,
    |client| Ok(client.motoko_stats()?.map_rows),
);

/// mo:core's `pure/Map<Nat64, Text>`: an immutable red-black tree in a `var` field, a new
/// version of the path to each inserted row.
const MO_PURE_MAP: StoreDef = motoko_store(
    "mo-pure-map",
    "mo_pure_map",
    "Motoko: mo:core's pure/Map (an immutable red-black tree on the heap), a canister of its own",
    ("Motoko pure/Map", "mo pure/Map", "mo:core's pure/Map"),
    motoko_memory(120, (200, 105), 4_000, 6_500_000_000, 5),
    12,
    |client| Ok(client.motoko_stats()?.pure_map_rows),
);

/// The values in a `Region` of stable memory, appended after their length, and a
/// `Map<Nat64, Nat64>` on the heap from id to offset.
const MO_REGION: StoreDef = StoreDef {
    // The canister's stable memory: the region's values and the region manager's pages.
    stable_bytes: |stats| stats.stable_pages * WASM_PAGE_SIZE,
    // An empty value stored where the region ends traps ("Region error: offset out of
    // bounds"): 20,000 rows of `--payload-size 0` do, at the 16,384th.
    min_value_size: 1,
    ..motoko_store(
        "mo-region",
        "mo_region",
        "Motoko: the values in a Region (stable memory), a Map from id to offset on the heap",
        ("Motoko Region", "mo Region", "the Motoko region"),
        motoko_memory(25, (55, 30), 900, 6_500_000_000, 3),
        13,
        |client| Ok(client.motoko_stats()?.region_rows),
    )
};

/// mo:core's `Map<Nat64, Text>` in the canister built with classical persistence (moc's
/// --legacy-persistence): a 32-bit heap, the map serialized to stable memory by the runtime
/// on upgrade and read back after it. Measured where the persistence differs: the upgrade
/// and scaling suites; a message's cost between upgrades is the other Map's question.
const MO_MAP_CLASSIC: StoreDef = StoreDef {
    name: "mo-map-classic",
    selected_by: SelectedBy::Stores {
        help: "Motoko: mo:core's Map with classical persistence (a 32-bit heap serialized \
               on upgrade), a canister of its own",
    },
    module: Module::MOTOKO_CLASSIC,
    record: "mo-map-classic",
    label: "Motoko Map (classical)",
    short_label: "mo Map classical",
    noun: "mo:core's Map with classical persistence",
    on_upgrade: OnUpgrade::ByRuntime,
    suites: &["upgrade", "scaling"],
    // Measured 2026-11-26: to 1,000,000 rows its heap is 234 MiB, 369 MiB after an upgrade
    // (mo-map's figures cover it); scaling alone to 10,000,000 rows (`--jobs 1`) peaked at
    // 5.4 GB, its heap 2.6 GB.
    memory: motoko_memory(40, (75, 40), 600, 6_000_000_000, 3),
    colour: Some(14),
    // Its stem and row count are the EOP Map's: the same main.mo.
    ..MO_MAP
};

/// A store of the tune variant module (`canisters/prebuilt/bench-tune.wasm`, the canister
/// built with the cargo feature `tune`: talc as the allocator of the whole module, and a
/// value type with a bound), measured by the tune suite beside `of`, the default module's
/// store whose calls it takes, whose shape and memory it has.
const fn tune_variant(
    of: StoreDef,
    name: &'static str,
    stem: &'static str,
    record: &'static str,
    label: &'static str,
    noun: &'static str,
) -> StoreDef {
    StoreDef {
        name,
        selected_by: SelectedBy::TuneVariants,
        module: Module::TUNE,
        stem,
        record,
        formerly: &[],
        label,
        noun,
        suites: &["tune"],
        schemas: &[],
        colour: None,
        variant_of: Some(of.name),
        ..of
    }
}

const HEAP_TALC: StoreDef = tune_variant(
    HEAP,
    "heap-talc",
    names::HEAP,
    "heap allocator=talc",
    "heap BTreeMap (talc)",
    "the heap map with talc",
);

const BTREE_TALC: StoreDef = tune_variant(
    BTREE,
    "btree-talc",
    names::BTREE,
    "btree allocator=talc",
    "StableBTreeMap (talc)",
    "the StableBTreeMap with talc",
);

/// A `StableBTreeMap<u64, Name>`, `Name` a `String` bounded to 100 bytes (`NAME_MAX_SIZE`
/// in the canister), with talc.
const BTREE_BOUNDED: StoreDef = StoreDef {
    max_value_size: Some(100),
    ..tune_variant(
        BTREE,
        "btree-bounded",
        "btree_bounded",
        "btree_bounded allocator=talc",
        "StableBTreeMap, bounded value (talc)",
        "the bounded value type",
    )
};

/// The row called `name` (`--stores` or `--tune-variants` value), if any.
pub fn find(name: &str) -> Option<StoreKind> {
    StoreKind::every().find(|k| k.name() == name)
}

/// Refuses `--payload-size size` where one of `kinds` cannot hold a value that small.
pub fn refuse_value_size(kinds: impl IntoIterator<Item = StoreKind>, size: u64) -> Result<()> {
    for kind in kinds {
        let min = kind.def().min_value_size;
        if size < min {
            anyhow::bail!(
                "--payload-size {size}: the store {name} holds values of at least {min} byte{s}; \
                 give {min} or more, or leave {name} out of --stores",
                name = kind.name(),
                s = if min == 1 { "" } else { "s" },
            );
        }
    }
    Ok(())
}

/// The stores the `--stores` values `kinds` select that `suite` measures, in table order.
pub fn measured_by(suite: &str, kinds: &[StoreKind]) -> Vec<StoreKind> {
    StoreKind::ALL
        .into_iter()
        .filter(|k| kinds.contains(k) && k.measured_by(suite))
        .collect()
}

/// A `--journal-modes` list given on the command line, checked against the stores `kinds`
/// that `suite` measures: when none of them is measured per journal mode, a mode other than
/// the one a SQLite store's binding fixes is refused, naming why; when none is SQLite, the
/// list is refused, as it would change nothing.
pub fn check_journal_modes(suite: &str, kinds: &[StoreKind], modes: &[JournalMode]) -> Result<()> {
    let measured = measured_by(suite, kinds);
    if measured.iter().any(|k| k.def().journal_modes) {
        return Ok(());
    }
    if !measured.is_empty() && measured.iter().all(|k| !k.def().sql) {
        let names: Vec<&str> = measured.iter().map(|k| k.name()).collect();
        let modes: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
        anyhow::bail!(
            "--journal-modes {}: no store this run measures is SQLite ({}), so there is no journal \
             mode to choose; leave --journal-modes out, or add --stores sqlite",
            modes.join(","),
            names.join(",")
        );
    }
    for kind in measured {
        let Some(fixed) = kind.fixed("journal_mode") else {
            continue;
        };
        if let Some(mode) = modes.iter().find(|m| m.as_str() != fixed.value) {
            let with_modes: Vec<&str> = StoreKind::ALL
                .iter()
                .filter(|k| k.def().journal_modes && k.measured_by(suite))
                .map(|k| k.name())
                .collect();
            anyhow::bail!(
                "--journal-modes {mode}: the store {kind} has no journal modes to choose: {}; \
                 leave --journal-modes out (or give {}), or add --stores {}",
                fixed.why,
                fixed.value,
                with_modes.join(",")
            );
        }
    }
    Ok(())
}

/// The row whose records' `store` column is `store`, as this version or an older one
/// ([`StoreDef::formerly`]) wrote it.
fn of_record(store: &str) -> Option<StoreKind> {
    StoreKind::every().find(|k| k.def().record == store || k.def().formerly.contains(&store))
}

/// A record's `store` column as this version writes it: a former spelling of a store's
/// record, alone or before settings (`sqlite_vfs`, `sqlite_vfs cache_size=-32768`), becomes
/// the current one; any other column is returned as it is. For keying records of runs of
/// different versions alike.
pub fn current_record(store: &str) -> std::borrow::Cow<'_, str> {
    let (head, rest) = store.split_at(store.find(' ').unwrap_or(store.len()));
    match of_record(head) {
        Some(kind) if kind.def().record != head => format!("{}{rest}", kind.def().record).into(),
        _ => store.into(),
    }
}

/// The store a record names (its `store` and `journal_mode` columns), back as a value;
/// `None` for a store or journal mode this version does not know. A store without journal
/// modes ignores the column.
pub fn parse(store: &str, journal_mode: &str) -> Option<Store> {
    let kind = of_record(store)?;
    if !kind.def().journal_modes {
        return Some(Store::new(kind, None));
    }
    JournalMode::from_name(journal_mode).map(|m| Store::new(kind, Some(m)))
}

/// A record's store as tables and plots name it: `StableBTreeMap`, `SQLite WAL`, `SQLite`
/// (no mode), `heap BTreeMap (cbor)` (another column in the mode's place); a store this
/// version does not know by its columns.
pub fn label(store: &str, journal_mode: &str) -> String {
    match of_record(store) {
        Some(kind) if journal_mode.is_empty() => kind.label().to_string(),
        Some(kind) if kind.def().journal_modes => format!("{} {journal_mode}", kind.label()),
        Some(kind) => format!("{} ({journal_mode})", kind.label()),
        None => format!("{store} {journal_mode}").trim().to_string(),
    }
}

/// A record's palette slot (see [`StoreDef::colour`]): its schema's own, else its store's;
/// `None` for a store this version does not know.
pub fn colour(store: &str, journal_mode: &str) -> Option<usize> {
    if let Some(slot) = Schema::of_record(store).and_then(|(_, s)| s.colour) {
        return Some(slot);
    }
    parse(store, journal_mode).and_then(Store::colour)
}

/// A record's store with its schema, for the suites whose SQLite columns are schemas
/// (dbbench, keys, sysbench): `SQLite WAL WITHOUT ROWID`, `StableBTreeMap`.
pub fn schema_label(store: &str, journal_mode: &str) -> String {
    match Schema::of_record(store) {
        Some((kind, schema)) => schema.label_of(kind, journal_mode),
        None => label(store, journal_mode),
    }
}

#[cfg(test)]
pub(crate) mod tests;
