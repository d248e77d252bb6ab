//! The `keys` suite (seed 002): the same rows keyed by a sequential u64, a ULID, a UUIDv4
//! or 32-character hex text, on the B-tree map and on SQLite as a rowid table, `WITHOUT
//! ROWID`, and an implicit rowid with a secondary index on the key. Per store and key type:
//! instructions per insert and per lookup, stable bytes per row, and SQLite's pages per
//! B-tree with sqlite3_analyzer's average fanout.

use std::collections::HashSet;
use std::time::Instant;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use crate::bench_canister::{BenchClient, SqliteConfig};
use crate::dbbench::Totals;
use crate::engine::Engine;
use crate::report::Report;
use crate::scenario::{ScenarioResult, Status};
use crate::suite::{Progress, SplitMix64, SuiteConfig};

/// Rows per insert message: seed 002 wrote one user's list, about 100 rows, per transaction.
pub const ROWS_PER_MESSAGE: u64 = 100;
/// Keys looked up, in queries of `ROWS_PER_MESSAGE`.
pub const LOOKUPS: u64 = 1_000;
/// Bytes of the value of every row.
pub const VALUE_SIZE: u64 = 100;
pub const MAX_ROWS: u64 = 200_000;

// What one message sends must be what the canister accepts per call.
const _: () = {
    use bench_types::limits::keys as canister;
    assert!(ROWS_PER_MESSAGE <= canister::MAX_KEYS_PER_CALL);
    assert!(VALUE_SIZE <= canister::MAX_VALUE_SIZE);
};

/// Key types, as the canister names them.
pub const KEY_TYPES: [&str; 4] = bench_types::names::KeyType::NAMES;
/// Stores, as the canister names them (the SQLite ones in `journal_mode`).
pub const STORES: [&str; 4] = bench_types::names::KeysStore::NAMES;

/// One scenario: a store and a key type; each gives an insert, a lookup and a storage row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeysScenario {
    pub store: &'static str,
    pub key_type: &'static str,
}

/// Pages of one SQLite B-tree, as `dbstat` counts them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageStats {
    pub store: String,
    pub key_type: String,
    /// The table or index.
    pub btree: String,
    pub interior_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
    pub bytes: u64,
}

impl PageStats {
    /// sqlite3_analyzer's "Average fanout": (interior + leaf - B-trees) / interior, in
    /// integer division; `None` for a B-tree that is a single leaf.
    pub fn fanout(&self) -> Option<u64> {
        (self.interior_pages > 0)
            .then(|| (self.interior_pages + self.leaf_pages - 1) / self.interior_pages)
    }
}

/// Stores kept by `--stores`: the map for btree, the three schemas for sqlite.
pub fn matrix(cfg: &SuiteConfig) -> Vec<KeysScenario> {
    let btree = cfg.stores.iter().any(|s| s.kind() == "btree");
    let sqlite = cfg.stores.iter().any(|s| s.kind() == "sqlite");
    let mut out = Vec::new();
    for key_type in KEY_TYPES {
        for store in STORES {
            if (store == "btree" && btree) || (store != "btree" && sqlite) {
                out.push(KeysScenario { store, key_type });
            }
        }
    }
    out
}

pub fn validate(cfg: &SuiteConfig) -> Result<()> {
    if cfg.keys_rows < LOOKUPS
        || cfg.keys_rows > MAX_ROWS
        || !cfg.keys_rows.is_multiple_of(ROWS_PER_MESSAGE)
    {
        return Err(anyhow!(
            "--keys-rows must be a multiple of {ROWS_PER_MESSAGE} between {LOOKUPS} and {MAX_ROWS}, got {}",
            cfg.keys_rows
        ));
    }
    Ok(())
}

/// The `rows` keys of one type in insert order, as the canister takes them.
/// u64: 1, 2, 3, ... (an auto-increment id), 8 bytes big-endian. ULID: 48-bit milliseconds,
/// one millisecond per message (`ic0.time` is constant within a message), then 80 random
/// bits that the monotonic factory increments within the message. UUIDv4: 122 random bits
/// with the version and variant bits. hex32: 16 random bytes as 32 lowercase hex digits.
pub fn keys(key_type: &str, rows: u64, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SplitMix64::new(seed ^ 0x4B45_5953);
    let mut random16 = || {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
        b[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
        b
    };
    match key_type {
        "u64" => (1..=rows).map(|i| i.to_be_bytes().to_vec()).collect(),
        "ulid" => {
            let mut out = Vec::with_capacity(rows as usize);
            let mut random = 0u128;
            for i in 0..rows {
                let message = i / ROWS_PER_MESSAGE;
                if i % ROWS_PER_MESSAGE == 0 {
                    // Fresh randomness for a new millisecond, with room for the +1s.
                    random = u128::from_be_bytes(random16()) >> 49;
                } else {
                    random += 1;
                }
                let ms: u64 = 1_700_000_000_000 + message;
                let mut k = ms.to_be_bytes()[2..].to_vec();
                k.extend_from_slice(&random.to_be_bytes()[6..]);
                out.push(k);
            }
            out
        }
        "uuid" => (0..rows)
            .map(|_| {
                let mut b = random16();
                b[6] = (b[6] & 0x0f) | 0x40;
                b[8] = (b[8] & 0x3f) | 0x80;
                b.to_vec()
            })
            .collect(),
        "hex32" => (0..rows)
            .map(|_| {
                random16()
                    .iter()
                    .flat_map(|b| format!("{b:02x}").into_bytes())
                    .collect()
            })
            .collect(),
        other => panic!("unknown key type {other}"),
    }
}

/// `LOOKUPS` distinct inserted keys, drawn uniformly, in draw order.
pub fn lookup_indices(rows: u64, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed ^ 0x100C);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while (out.len() as u64) < LOOKUPS {
        let i = rng.below(rows) as usize;
        if seen.insert(i) {
            out.push(i);
        }
    }
    out
}

pub fn run(
    engine: &mut dyn Engine,
    wasm: &[u8],
    cfg: &SuiteConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Report> {
    validate(cfg)?;
    let started = Instant::now();
    let engine_name = engine.name().to_string();
    let mut client = BenchClient::install(engine, wasm)?;
    let canister = client.canister;
    let mode = cfg.keys_journal_mode;
    client
        .configure_sqlite(&SqliteConfig {
            journal_mode: Some(mode.to_string()),
            ..SqliteConfig::default()
        })?
        .value
        .map_err(|e| anyhow!("setting journal_mode {mode} for the keys suite: {e}"))?;
    let base = client.engine.snapshot(canister)?;
    let rows = cfg.keys_rows;
    let scenarios = matrix(cfg);
    let lookups = lookup_indices(rows, cfg.seed);
    let mut results = Vec::new();
    let mut page_stats = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let key = format!("{}/{}", s.store, s.key_type);
        progress(Progress::Scenario {
            done: i,
            total: scenarios.len(),
            key: &key,
        });
        client.engine.restore(canister, base)?;
        client
            .keys_reset(s.store, s.key_type)?
            .value
            .map_err(|e| anyhow!("keys_reset({key}) failed: {e}"))?;
        let all = keys(s.key_type, rows, cfg.seed);
        let mut insert = Totals::default();
        let mut failed = None;
        for chunk in all.chunks(ROWS_PER_MESSAGE as usize) {
            let m = client.keys_insert(s.store, s.key_type, chunk, VALUE_SIZE)?;
            if let Err(e) = insert.add(m, true) {
                failed = Some(e);
                break;
            }
        }
        let mut lookup = Totals::default();
        if failed.is_none() {
            let wanted: Vec<Vec<u8>> = lookups.iter().map(|&i| all[i].clone()).collect();
            for chunk in wanted.chunks(ROWS_PER_MESSAGE as usize) {
                let m = client.keys_lookup(s.store, s.key_type, chunk)?;
                if let Err(e) = lookup.add(m, false) {
                    failed = Some(e);
                    break;
                }
            }
        }
        let stats = match &failed {
            None => Some(
                client
                    .keys_stats(s.store, s.key_type)?
                    .map_err(|e| anyhow!("keys_stats({key}) failed: {e}"))?,
            ),
            Some(_) => None,
        };
        let journal = if s.store == "btree" {
            String::new()
        } else {
            mode.to_string()
        };
        let store = match s.store {
            "sqlite_rowid" => "sqlite",
            other => other,
        };
        let mut row = |operation: &str, batch: u64, t: &Totals, method: &str, args: String| {
            let mut r = ScenarioResult {
                suite: "keys".into(),
                engine: engine_name.clone(),
                store: store.into(),
                journal_mode: journal.clone(),
                position: s.key_type.into(),
                operation: operation.into(),
                batch,
                rows_before: if operation == "insert" { 0 } else { rows },
                method: method.into(),
                args,
                status: Status::Ok,
                instructions: t.instructions,
                instructions_per_row: t.instructions as f64 / batch as f64,
                store_instructions: t.store_instructions,
                store_instructions_per_row: t.store_instructions as f64 / batch as f64,
                cycles: t.cycles as u64,
                usd: t.cycles as f64 / 1e12 * cfg.usd_per_xdr,
                heap_pages_delta: 0,
                stable_pages_delta: t.stable_delta,
                heap_dirty_pages: t.heap_dirty,
                stable_dirty_pages: t.stable_dirty,
                bytes: t.bytes,
            };
            if let Some(e) = &failed {
                r.status = Status::Failed(e.clone());
            } else if operation == "point_lookup" && t.found != batch {
                r.status = Status::Failed(format!("{} of {batch} keys found", t.found));
            }
            results.push(r);
        };
        let who = format!("{:?}, {:?}", s.store, s.key_type);
        row(
            "insert",
            rows,
            &insert,
            "keys_insert",
            format!("({who}, {ROWS_PER_MESSAGE} keys per message, {VALUE_SIZE}-byte values)"),
        );
        row(
            "point_lookup",
            LOOKUPS,
            &lookup,
            "keys_lookup",
            format!("({who}, {ROWS_PER_MESSAGE} keys per query)"),
        );
        let storage = Totals {
            bytes: stats.as_ref().map(|s| s.stable_bytes).unwrap_or(0),
            ..Totals::default()
        };
        row("storage", rows, &storage, "keys_stats", format!("({who})"));
        if let Some(stats) = stats {
            for b in stats.btrees {
                page_stats.push(PageStats {
                    store: store.into(),
                    key_type: s.key_type.into(),
                    btree: b.name,
                    interior_pages: b.interior_pages,
                    leaf_pages: b.leaf_pages,
                    overflow_pages: b.overflow_pages,
                    bytes: b.bytes,
                });
            }
        }
    }
    progress(Progress::Scenario {
        done: scenarios.len(),
        total: scenarios.len(),
        key: "",
    });
    Ok(Report {
        suite: "keys".into(),
        engine: engine_name,
        rows_before: rows,
        seed: cfg.seed,
        payload_size: VALUE_SIZE,
        wall_seconds: started.elapsed().as_secs_f64(),
        executed_instructions: client.executed_instructions,
        results,
        notes: vec![
            format!("Keys (seed 002): {rows} rows per store and key type, inserted {ROWS_PER_MESSAGE} per update message in one transaction (seed 002 wrote one user's ~100-row list per transaction), {VALUE_SIZE}-byte values; then {LOOKUPS} present keys looked up, {ROWS_PER_MESSAGE} per query. SQLite in journal_mode {mode}."),
            "Key types: u64 = 1, 2, 3, ... (auto-increment); ULID = 48-bit ms time, one ms per message (ic0.time is constant in a message), 80 random bits incremented within the message (monotonic factory); UUIDv4 = 122 random bits; hex32 = 16 random bytes as 32-char lowercase hex text. Random bits from --seed.".into(),
            "Schemas: sqlite = rowid table with k PRIMARY KEY (for u64, INTEGER PRIMARY KEY is the rowid: one B-tree); sqlite_without_rowid = the same WITHOUT ROWID; sqlite_secondary = implicit rowid + CREATE INDEX on k. btree = StableBTreeMap keyed by [u8; 8] (the u64 big-endian, as the map stores a u64), [u8; 16] or String.".into(),
            "Storage: SQLite = pages of the table's B-trees (dbstat) x page size; map = its virtual memory's size (grown in 64 KiB pages). Fanout = sqlite3_analyzer's (interior + leaf - 1) / interior.".into(),
        ],
        page_stats,
        ceilings: None,
    })
}
