//! The `keys` suite (seed 002): the same rows keyed by a sequential u64, a ULID, a UUIDv4
//! or 32-character hex text, on the B-tree map and on SQLite as a rowid table, `WITHOUT
//! ROWID`, and an implicit rowid with a secondary index on the key. Per store and key type:
//! instructions per insert and per lookup, stable bytes per row, and SQLite's pages per
//! B-tree with sqlite3_analyzer's average fanout.

use std::collections::HashSet;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use clap::{ArgMatches, Args};

use super::dbbench::Totals;
use super::grid::{dot_plot_file, store_dot, StoreColumn};
use super::pool::{self, Outcome};
use super::scenario::{JournalMode, StoreKind};
use super::shared::{default_from_flags, store_selected, Define, Header, Measure, Reads, Run};
use super::users::SplitMix64;
use super::CommonArgs;
use crate::bench_canister::BenchClient;
use crate::engine::SnapshotId;
use crate::report::format::{per_row, thousands};
use crate::report::table::Align;
use crate::report::work::Kind;
use crate::report::{
    message_cells_legend, Block, Document, DotPlot, DotPoint, Plot, Report, ScenarioResult, Status,
    Table,
};
use crate::stores::{self, ModuleNeed, SchemaStore};

/// `--suite keys`.
const SUITE: &str = "keys";

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

/// One scenario: a store and a key type; each gives an insert, a lookup and a storage row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeysScenario {
    /// The store, as the canister names it.
    pub store: &'static str,
    pub key_type: &'static str,
    /// The store table's schema (in the suite's journal mode, where its store has them).
    pub schema: SchemaStore,
}

/// results.json's field for the SQLite pages per B-tree.
const PAGE_STATS: &str = "page_stats";

/// The SQLite pages per B-tree that a keys report carries (none for a map-only run).
pub fn page_stats(report: &Report) -> Vec<PageStats> {
    report.extra(PAGE_STATS).unwrap_or_default()
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

/// Rows per store and key type in this suite: small, so the run stays quick.
pub const DEFAULT_ROWS: u64 = 10_000;

pub struct Keys;

#[derive(Args)]
#[command(next_help_heading = "keys")]
pub struct KeysArgs {
    /// Rows per store and key type (a multiple of 100).
    #[arg(long, default_value_t = DEFAULT_ROWS)]
    keys_rows: u64,
    /// SQLite journal mode (seed 002 used WAL).
    #[arg(long, value_enum, default_value_t = JournalMode::Wal)]
    keys_journal_mode: JournalMode,
}

/// The keys suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The map for `btree`; the three SQLite schemas for `sqlite`.
    pub stores: Vec<StoreKind>,
    /// Rows per store and key type.
    pub rows: u64,
    /// SQLite's journal mode (seed 002 used WAL).
    pub journal_mode: JournalMode,
    pub seed: u64,
    pub usd_per_xdr: f64,
}

default_from_flags!(Keys => Config);

impl Config {
    /// Per key type, the store table's schemas of this suite that `stores` selects: the map
    /// for btree, the three SQLite schemas for sqlite.
    pub fn matrix(&self) -> Vec<KeysScenario> {
        let schemas = SchemaStore::of_suite(SUITE, &self.stores, &[self.journal_mode]);
        let mut out = Vec::new();
        for key_type in KEY_TYPES {
            for schema in &schemas {
                out.push(KeysScenario {
                    store: schema.canister_name(SUITE),
                    key_type,
                    schema: *schema,
                });
            }
        }
        out
    }
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

/// The keys suite's table for one operation: key types by stores.
fn table(report: &Report, operation: &str, cell: fn(&ScenarioResult) -> String) -> Table {
    let selected: Vec<&ScenarioResult> = report
        .results
        .iter()
        .filter(|r| r.operation == operation)
        .collect();
    let mut rows: Vec<&str> = Vec::new();
    let mut columns: Vec<StoreColumn> = Vec::new();
    for r in &selected {
        if !rows.contains(&r.position.as_str()) {
            rows.push(&r.position);
        }
        let c = StoreColumn::of(r);
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let mut headers = vec!["Key".to_string()];
    headers.extend(columns.iter().map(StoreColumn::schema_label));
    let mut table = Table::new(headers);
    for row in rows {
        let mut cells = vec![row.to_string()];
        for c in &columns {
            let r = selected
                .iter()
                .find(|r| r.position == row && StoreColumn::of(r) == *c);
            cells.push(match r {
                None => "-".into(),
                Some(r) if r.status != Status::Ok => "failed".into(),
                Some(r) => cell(r),
            });
        }
        table.push(cells);
    }
    table
}

fn pages_table(page_stats: &[PageStats]) -> Table {
    use Align::{Left, Right};
    let mut table = Table::with_aligns(
        [
            "Store", "Key", "B-tree", "Interior", "Leaf", "Overflow", "Fanout", "Bytes",
        ]
        .map(String::from)
        .to_vec(),
        vec![Left, Left, Left, Right, Right, Right, Right, Right],
    );
    for p in page_stats {
        table.push(vec![
            p.store.clone(),
            p.key_type.clone(),
            p.btree.clone(),
            thousands(p.interior_pages),
            thousands(p.leaf_pages),
            thousands(p.overflow_pages),
            p.fanout()
                .map(|f| format!("{f}.00"))
                .unwrap_or_else(|| "-".into()),
            thousands(p.bytes),
        ]);
    }
    table
}

/// plot-keys.svg: instructions per insert and per lookup, one row per key type and
/// operation, one marker per store.
fn plot(report: &Report) -> Option<Plot> {
    let points: Vec<DotPoint> = report
        .results
        .iter()
        .filter(|r| {
            r.status == Status::Ok && matches!(r.operation.as_str(), "insert" | "point_lookup")
        })
        .map(|r| {
            let what = if r.operation == "insert" {
                "insert"
            } else {
                "lookup"
            };
            store_dot(r, format!("{} {what}", r.position))
        })
        .collect();
    let plot = DotPlot {
        title: "Key types: store instructions per row".into(),
        axis: "store instructions per insert / lookup (log scale)".into(),
        unit: "instructions/row".into(),
        points,
    };
    dot_plot_file("keys", plot)
}

/// Per insert, per lookup, stable bytes per row, and SQLite's B-trees; the terminal shows
/// the same tables.
pub fn document(report: &Report) -> Document {
    let page_stats = page_stats(report);
    let plot = plot(report);
    let heading = |text: &str| Block::Heading {
        level: 2,
        text: text.into(),
    };
    let sections = || {
        vec![
            heading("store instructions per lookup"),
            Block::Table(table(report, "point_lookup", |r| {
                per_row(r.store_instructions_per_row)
            })),
            heading("stable bytes per row"),
            Block::Table(table(report, "storage", |r| {
                per_row(r.bytes as f64 / r.batch.max(1) as f64)
            })),
            heading("SQLite pages per B-tree (dbstat; fanout as sqlite3_analyzer)"),
            Block::Table(pages_table(&page_stats)),
        ]
    };
    let inserts = || {
        Block::Table(table(report, "insert", |r| {
            per_row(r.store_instructions_per_row)
        }))
    };
    let mut doc = Document {
        markdown: vec![
            message_cells_legend(report),
            heading("store instructions per insert"),
        ],
        terminal: vec![heading("store instructions per insert"), inserts()],
        plots: Vec::new(),
    };
    if let Some(plot) = plot {
        doc.push_plot("Key types: instructions per row", plot);
    }
    doc.markdown.push(inserts());
    doc.markdown.extend(sections());
    doc.terminal.extend(sections());
    doc
}

impl Define for Keys {
    type Args = KeysArgs;
    type Plan = Config;

    fn plan(args: KeysArgs, common: &CommonArgs, _: &ArgMatches) -> Result<Config> {
        Ok(Config {
            stores: common.stores.clone(),
            rows: args.keys_rows,
            journal_mode: args.keys_journal_mode,
            seed: common.seed,
            usd_per_xdr: common.usd_per_xdr,
        })
    }

    const DOCUMENT: fn(&Report) -> Document = document;
    const READS: Reads = Reads::Only(&["stores", "seed", "usd_per_xdr"]);
}

impl Measure for Config {
    const SUITE: &'static str = SUITE;

    /// The modules its stores live in.
    fn modules(&self) -> Vec<ModuleNeed> {
        stores::needs(stores::measured_by(SUITE, &self.stores))
    }

    fn validate(&self) -> Result<()> {
        if self.rows < LOOKUPS
            || self.rows > MAX_ROWS
            || !self.rows.is_multiple_of(ROWS_PER_MESSAGE)
        {
            return Err(anyhow!(
                "--keys-rows must be a multiple of {ROWS_PER_MESSAGE} between {LOOKUPS} and {MAX_ROWS}, got {}",
                self.rows
            ));
        }
        store_selected(&self.stores, Self::SUITE)
    }

    fn measure(&self, run: Run<'_>) -> Result<Report> {
        let cfg = self;
        let (session, exec) = (run.session, run.exec);
        let (work, engine_name) = (&session.work, &session.engine_name);
        let (mut client, installed) = session.install(run.engine, run.wasm)?;
        let canister = client.canister;
        let mode = cfg.journal_mode;
        let (base, set_up) = work.unit(
            Kind::Fill,
            format!("set SQLite's journal mode to {mode}"),
            &[installed],
            || -> Result<SnapshotId> {
                stores::set_journal_mode(&mut client, mode)?
                    .map_err(|e| anyhow!("setting journal_mode {mode} for the keys suite: {e}"))?;
                client.engine.snapshot(canister)
            },
        );
        let base = base?;
        let rows = cfg.rows;
        let scenarios = cfg.matrix();
        let lookups = lookup_indices(rows, cfg.seed);
        let measured = pool::run_scenarios(
            &mut client,
            base,
            scenarios.len(),
            exec,
            work,
            &[set_up],
            &|i| format!("{}/{}", scenarios[i].store, scenarios[i].key_type),
            run.progress,
            &|client, i| measure(client, cfg, engine_name, &scenarios[i], &lookups, base),
        )?;
        let header = Header {
            workload: crate::report::Workload {
                rows_before: rows,
                seed: cfg.seed,
                payload_size: VALUE_SIZE,
            },
            prefill: None,
            notes: notes(rows, mode),
        };
        Ok(session.report(&client, header, measured))
    }
}

/// One scenario: the keys inserted into an empty store from `base`, then `lookups` of them
/// looked up, then the store's size and (SQLite) its B-trees.
fn measure(
    client: &mut BenchClient<'_>,
    cfg: &Config,
    engine_name: &str,
    s: &KeysScenario,
    lookups: &[usize],
    base: SnapshotId,
) -> Result<Outcome> {
    let canister = client.canister;
    let rows = cfg.rows;
    let key = format!("{}/{}", s.store, s.key_type);
    let mut results = Vec::new();
    let mut page_stats = Vec::new();
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
    // The results name the rowid table `sqlite`, as the other suites do (the table's record).
    let (store, journal) = (s.schema.record(), s.schema.journal_column());
    let mut row = |operation: &str, batch: u64, t: &Totals, method: &str, args: String| {
        let mut r = ScenarioResult {
            suite: SUITE.into(),
            engine: engine_name.into(),
            store: store.into(),
            journal_mode: journal.clone(),
            position: s.key_type.into(),
            operation: operation.into(),
            batch,
            rows_before: if operation == "insert" { 0 } else { rows },
            method: method.into(),
            args,
            status: Status::Ok,
            ..t.record(batch, cfg.usd_per_xdr)
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
    let page_stats = page_stats
        .iter()
        .map(|p| serde_json::to_value(p).expect("page stats serialize"))
        .collect();
    Ok(Outcome {
        results,
        lists: vec![(PAGE_STATS, page_stats)],
    })
}

fn notes(rows: u64, mode: JournalMode) -> Vec<String> {
    vec![
            format!("Keys (seed 002): {rows} rows per store and key type, inserted {ROWS_PER_MESSAGE} per update message in one transaction (seed 002 wrote one user's ~100-row list per transaction), {VALUE_SIZE}-byte values; then {LOOKUPS} present keys looked up, {ROWS_PER_MESSAGE} per query. SQLite in journal_mode {mode}."),
            "Key types: u64 = 1, 2, 3, ... (auto-increment); ULID = 48-bit ms time, one ms per message (ic0.time is constant in a message), 80 random bits incremented within the message (monotonic factory); UUIDv4 = 122 random bits; hex32 = 16 random bytes as 32-char lowercase hex text. Random bits from --seed.".into(),
            "Schemas: sqlite = rowid table with k PRIMARY KEY (for u64, INTEGER PRIMARY KEY is the rowid: one B-tree); sqlite_without_rowid = the same WITHOUT ROWID; sqlite_secondary = implicit rowid + CREATE INDEX on k. btree = StableBTreeMap keyed by [u8; 8] (the u64 big-endian, as the map stores a u64), [u8; 16] or String.".into(),
            "Storage: SQLite = pages of the table's B-trees (dbstat) x page size; map = its virtual memory's size (grown in 64 KiB pages). Fanout = sqlite3_analyzer's (interior + leaf - 1) / interior.".into(),
    ]
}
