//! The `tune` suite: which SQLite settings make a message cheapest. Since the replica's memory
//! tracker a small message pays mostly for the 64 KiB pages it touches, and where SQLite's
//! pages fall is set by its page size, its page cache and its journal. The suite fills one
//! SQLite store per page size, then searches the settings a `dfx canister call bench
//! configure_sqlite` user can set, coordinate by coordinate: page size at the canister's
//! defaults, then the page cache at each workload's best page size, then journal mode and
//! `synchronous` together at its best page size and cache. Every configuration is measured on
//! every workload, under the engine's replica and, beside it, under the last replica before
//! the tracker, so the part of a gain owed to the tracker shows.
//!
//! Here: what is searched (knobs, variants, settings, workloads) and the suite's settings;
//! `tune/options.rs` reads the flags, `tune/search.rs` plans the stages, `tune/run.rs` and
//! `tune/measure.rs` run them, `tune/beside.rs` names the stores measured beside the search
//! (other value sizes among them), `tune/binding.rs` searches another binding's SQLite
//! (ic-sqlite-vfs) in a canister of its own, `tune/document.rs` renders the report.

use std::path::PathBuf;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::decision::MESSAGE_WORKLOADS;
use super::scenario::{JournalMode, Operation, Position, Store, StoreKind};
use super::users::{self};
use crate::bench_canister::{SqliteConfig, SqliteSettings};
use crate::report::format::thousands;
use crate::report::ScenarioResult;
use crate::stores::SelectedBy;
use bench_types::pragma::Synchronous;

mod beside;
mod binding;
mod document;
mod measure;
mod options;
mod run;
mod search;

pub use binding::{binding_cache_table, bindings_table, Binding};
pub use document::{cheapest_table, decision_table, found, variants_table, Found};
pub use options::TuneArgs;

/// SQLite's page sizes from 1 KiB to its largest (512 is allowed but never wins: more pages).
pub const DEFAULT_PAGE_SIZES: [u32; 7] = [1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536];
/// `PRAGMA cache_size` values: SQLite's own default (-2000: 2,000 KiB), values between, and
/// the bench canister's (ic-rusqlite's) 500,000 pages.
pub const DEFAULT_CACHE_SIZES: [i64; 4] = [-2_000, 10_000, 100_000, 500_000];
/// `PRAGMA synchronous` values searched by default (EXTRA syncs more than FULL, and nothing
/// is synced on the IC: it costs the same as FULL or more).
pub const DEFAULT_SYNCHRONOUS: [&str; 3] = ["OFF", "NORMAL", "FULL"];

/// Value sizes (bytes of a row's username payload) the StableBTreeMap and the stores beside
/// it are measured at, besides `--payload-size`: a tenth, the forum's 100 and ten times as
/// much, so a reader sees both directions from the default at a cost the default run bears
/// (two more fills of each store at 1,000,000 rows; the 1,000-byte ones hold about 1 GB
/// each, still well inside the suite's 10-minute budget on 2 cores).
pub const DEFAULT_VALUE_SIZES: [&str; 3] = ["10", "100", "1000"];
/// The largest payload the bench canister's `set_payload_size` accepts (its
/// `MAX_PAYLOAD_SIZE`, 1 MiB; the canister's own crate, not the shared one, holds it, and
/// tests/it/tune.rs checks the two agree).
pub const MAX_VALUE_SIZE: u64 = 1 << 20;

/// A setting the search can vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Knob {
    PageSize,
    CacheSize,
    JournalMode,
    Synchronous,
}

impl Knob {
    pub const ALL: [Knob; 4] = [
        Knob::PageSize,
        Knob::CacheSize,
        Knob::JournalMode,
        Knob::Synchronous,
    ];

    /// The name SQLite (and `configure_sqlite`) gives it.
    pub fn name(self) -> &'static str {
        match self {
            Knob::PageSize => "page_size",
            Knob::CacheSize => "cache_size",
            Knob::JournalMode => "journal_mode",
            Knob::Synchronous => "synchronous",
        }
    }

    fn parse(name: &str) -> Result<Knob> {
        if name.trim().eq_ignore_ascii_case("bucket_size") {
            return Err(anyhow!("{BUCKET_SIZE_NOT_SEARCHABLE}"));
        }
        named(Knob::ALL, Knob::name, name).map_err(|accepted| {
            anyhow!("unknown setting {name:?} in --tune-settings; accepted: {accepted}")
        })
    }
}

/// The one of `all` called `name` (any case, spaces around it ignored), else the names
/// accepted, comma-separated.
fn named<T: Copy, const N: usize>(
    all: [T; N],
    name_of: fn(T) -> &'static str,
    name: &str,
) -> Result<T, String> {
    all.into_iter()
        .find(|&t| name_of(t).eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| all.map(name_of).join(", "))
}

/// Why `--tune-settings bucket_size` is refused, in one line.
pub const BUCKET_SIZE_NOT_SEARCHABLE: &str = "--tune-settings: bucket_size cannot be searched: ic-rusqlite 0.5 creates the canister's only MemoryManager (bucket size 128 pages, not settable), and a bucket size does not change which 64 KiB pages a message touches (docs/tuning.md)";

/// The store whose settings the suite searches (`configure_sqlite`'s): `--stores` must name
/// it.
pub const SEARCHED: StoreKind = StoreKind::Sqlite;
/// The store `--tune-value-sizes` measures at other value sizes, with the stores a reader
/// compares it with beside it.
pub const VALUE_SIZES_OF: StoreKind = StoreKind::Btree;

/// Whether a record's `store` is one of the search's (a setting of the searched store).
fn is_search_record(store: &str) -> bool {
    store
        .strip_prefix(SEARCHED.def().record)
        .is_some_and(|rest| rest.starts_with(' '))
}

/// The tune variant module's stores (`--tune-variants`): the rows of the store table whose
/// module is the tune variant's, measured at their defaults beside the default module's, in
/// table order.
pub fn variants() -> Vec<StoreKind> {
    StoreKind::every()
        .filter(|k| k.def().selected_by == SelectedBy::TuneVariants)
        .collect()
}

/// The `--tune-variants` value `name` (any case, spaces around it ignored).
fn parse_variant(name: &str) -> Result<StoreKind> {
    // `none` alone is taken before any variant is parsed: here it is beside variants.
    if name.trim().eq_ignore_ascii_case("none") {
        return Err(anyhow!(
            "--tune-variants: none stands alone (it measures no variant), so it cannot be \
             combined with variants: give none, or the variants"
        ));
    }
    let all = variants();
    all.iter()
        .copied()
        .find(|v| v.name().eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            let accepted: Vec<&str> = all.iter().map(|v| v.name()).collect();
            anyhow!(
                "--tune-variants: unknown variant {name:?}; accepted: {}, or none",
                accepted.join(", ")
            )
        })
}

/// The tune variant a record's `store` names (under the vintage beside too).
fn variant_of_record(store: &str) -> Option<StoreKind> {
    let store = store.split(" replica=").next().unwrap_or(store);
    variants().into_iter().find(|v| v.def().record == store)
}

/// The default module's store a variant takes the calls of (and which `--stores` must
/// name): its shape and memory.
fn variant_base(variant: StoreKind) -> Store {
    Store::new(variant.base(), None)
}

/// The store `--tune-value-sizes` measures, as the others beside the search name it.
fn value_sizes_of() -> Store {
    Store::new(VALUE_SIZES_OF, None)
}

/// The bound of the tune variant's bounded value type, for the notes that describe the
/// module.
fn bounded_max_size() -> u64 {
    variants()
        .into_iter()
        .find_map(value_bound)
        .unwrap_or_default()
}

/// The largest payload a variant's value type holds, if it is bounded.
fn value_bound(variant: StoreKind) -> Option<u64> {
    variant.def().max_value_size
}

/// One configuration of the SQLite store (locking mode EXCLUSIVE, as the canister keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Setting {
    pub page_size: u32,
    pub cache_size: i64,
    pub journal_mode: JournalMode,
    pub synchronous: Synchronous,
}

impl Setting {
    /// The record's `store`: `sqlite page_size=4096 cache_size=500000 synchronous=OFF` (the
    /// journal mode is the record's own column).
    pub fn store_label(&self) -> String {
        format!(
            "{} page_size={} cache_size={} synchronous={}",
            SEARCHED.def().record,
            self.page_size,
            self.cache_size,
            self.synchronous
        )
    }

    /// For tables: `page_size 16,384, cache_size 500,000, PERSIST, synchronous OFF`.
    pub fn describe(&self) -> String {
        format!(
            "page_size {}, cache_size {}, {}, synchronous {}",
            thousands(self.page_size as u64),
            signed(self.cache_size),
            self.journal_mode,
            self.synchronous
        )
    }

    /// What `configure_sqlite` is sent.
    fn config(&self) -> SqliteConfig {
        SqliteConfig {
            journal_mode: Some(self.journal_mode.to_string()),
            synchronous: Some(self.synchronous.to_string()),
            page_size: Some(self.page_size),
            cache_size: Some(self.cache_size),
            ..SqliteConfig::default()
        }
    }

    /// The `dfx canister call bench configure_sqlite` argument that applies it.
    pub fn candid(&self) -> String {
        format!(
            "(record {{ page_size = opt ({} : nat32); cache_size = opt ({} : int64); journal_mode = opt \"{}\"; synchronous = opt \"{}\" }})",
            self.page_size, self.cache_size, self.journal_mode, self.synchronous
        )
    }

    fn from_settings(s: &SqliteSettings) -> Result<Setting> {
        Ok(Setting {
            page_size: s.page_size,
            cache_size: s.cache_size,
            journal_mode: s
                .journal_mode
                .parse()
                .map_err(|e: String| anyhow!("the canister's journal mode: {e}"))?,
            synchronous: Synchronous::from_name(&s.synchronous).ok_or_else(|| {
                anyhow!(
                    "the canister reports an unknown synchronous {:?}",
                    s.synchronous
                )
            })?,
        })
    }
}

/// A record's Wasm pages for tables: heap and stable, accessed/written.
fn pages_cell(r: &ScenarioResult) -> String {
    match r.pages {
        Some(p) => format!(
            "{}/{} + {}/{}",
            p.heap_wasm_pages_accessed,
            p.heap_wasm_pages_written,
            p.stable_wasm_pages_accessed,
            p.stable_wasm_pages_written
        ),
        None => "-".into(),
    }
}

/// `defaults` over `best`, for tables: `1.42x`.
fn gain(defaults: u64, best: u64) -> String {
    if best == 0 {
        return "-".into();
    }
    let x = defaults as f64 / best as f64;
    if x < 10.0 {
        format!("{x:.2}x")
    } else {
        format!("{x:.1}x")
    }
}

fn signed(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n as u64)
    }
}

/// A workload of the search: the decision table's six (named as it names them) and seed
/// 003's middle inserts of 100 rows, each one message.
pub struct Workload {
    pub name: &'static str,
    pub position: Position,
    pub operation: Operation,
}

pub const WORKLOADS: [Workload; 7] = {
    use Operation::{Insert, PointLookups, RangeScan};
    use Position::{Middle, Random};
    [
        Workload::new(MESSAGE_WORKLOADS[0].name, Middle, Insert { rows: 1 }),
        Workload::new("middle inserts (100 rows)", Middle, Insert { rows: 100 }),
        Workload::new(MESSAGE_WORKLOADS[1].name, Middle, Insert { rows: 1_000 }),
        Workload::new(MESSAGE_WORKLOADS[2].name, Random, Insert { rows: 1 }),
        Workload::new(MESSAGE_WORKLOADS[3].name, Random, PointLookups { keys: 1 }),
        Workload::new(
            MESSAGE_WORKLOADS[4].name,
            Random,
            PointLookups { keys: 100 },
        ),
        Workload::new(MESSAGE_WORKLOADS[5].name, Middle, RangeScan { rows: 1_000 }),
    ]
};

impl Workload {
    const fn new(name: &'static str, position: Position, operation: Operation) -> Workload {
        Workload {
            name,
            position,
            operation,
        }
    }

    fn picks(&self, r: &ScenarioResult) -> bool {
        r.position == self.position.as_str()
            && r.operation == self.operation.kind()
            && r.batch == self.operation.rows()
    }
}

pub struct Tune;

/// The tune suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Rows, payload size, seed and price (its stores are the journal modes searched).
    pub users: users::Config,
    pub page_sizes: Vec<u32>,
    pub cache_sizes: Vec<i64>,
    pub journal_modes: Vec<JournalMode>,
    pub synchronous: Vec<Synchronous>,
    /// What the search varies, in search order.
    pub knobs: Vec<Knob>,
    /// The other stores measured at their defaults beside SQLite (`--stores`): the heap map
    /// and the StableBTreeMap, for the decision table.
    pub others: Vec<Store>,
    /// The tune variant's stores measured beside them (`--tune-variants`).
    pub variants: Vec<StoreKind>,
    /// The tune variant module (`--tune-wasm`); None: the committed one of these sources.
    pub variant_wasm: Option<PathBuf>,
    /// Why a variant asked for by default was left out (for "not searched").
    pub variants_left_out: Vec<String>,
    /// The value sizes measured besides `users.payload_size` (ascending, without it).
    pub value_sizes: Vec<u64>,
    /// The SQLite stores of another binding, each searched in a canister of its own over
    /// the settings its binding leaves a canister (`--stores`: ic-sqlite-vfs's cache_size).
    pub bindings: Vec<StoreKind>,
}

/// `page_size` values SQLite takes: a power of two from 512 to 65,536.
pub fn check_page_size(size: u32) -> Result<()> {
    if size.is_power_of_two() && (512..=65_536).contains(&size) {
        Ok(())
    } else {
        Err(anyhow!(
            "--tune-page-sizes: {size} is not a SQLite page size (a power of two from 512 to 65,536)"
        ))
    }
}

/// What the report keeps of the search, for the document: the same in every shard.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Search {
    /// The store label and journal mode of the canister's defaults.
    pub defaults: (String, String),
    /// The `--replica` vintage measured beside the engine's, if any.
    pub beside: Option<String>,
    /// What each stage varied.
    pub stages: Vec<String>,
    /// What was not searched.
    pub not_searched: Vec<String>,
    /// SHA-256 of the tune variant module, when its stores were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_module: Option<String>,
    /// The value sizes measured besides the run's payload size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_sizes: Vec<u64>,
    /// The other bindings' searches, each in a canister of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<Binding>,
}

const SEARCH: &str = "tune";

/// One measured configuration of one workload: under the engine's replica and beside it.
type Measured = (Setting, ScenarioResult, Option<ScenarioResult>);

#[cfg(test)]
mod tests {
    use super::document::{describe_record, parse_setting};
    use super::search::beside_vintage;
    use super::*;
    use crate::engine::cost::Replica;

    fn setting() -> Setting {
        Setting {
            page_size: 16_384,
            cache_size: -2_000,
            journal_mode: JournalMode::Wal,
            synchronous: Synchronous::Normal,
        }
    }

    #[test]
    fn a_record_names_its_setting_and_reads_back_as_it() {
        let s = setting();
        let r = ScenarioResult {
            store: s.store_label(),
            journal_mode: s.journal_mode.to_string(),
            position: "middle".into(),
            ..ScenarioResult::default()
        };
        assert_eq!(parse_setting(&r), Some(s));
        assert_eq!(
            describe_record(&r),
            "page_size 16,384, cache_size -2,000, WAL, synchronous NORMAL"
        );
        assert_eq!(describe_record(&r), s.describe());
        assert_eq!(
            r.base_id(),
            "sqlite-page_size_16384-cache_size_-2000-synchronous_normal-wal/middle//0"
        );
    }

    #[test]
    fn only_powers_of_two_sqlite_takes_are_page_sizes() {
        for ok in [512, 1_024, 65_536] {
            assert!(check_page_size(ok).is_ok());
        }
        for bad in [0, 256, 3_000, 131_072] {
            let e = check_page_size(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{bad} is not a SQLite page size")),
                "{e}"
            );
        }
        assert_eq!(
            Knob::parse(" Bucket_Size").unwrap_err().to_string(),
            BUCKET_SIZE_NOT_SEARCHABLE
        );
        assert!(Knob::parse("bucket")
            .unwrap_err()
            .to_string()
            .contains("unknown setting \"bucket\""));
        assert_eq!(Knob::parse(" Page_Size").unwrap(), Knob::PageSize);
    }

    #[test]
    fn a_stage_reaches_every_combination_of_its_knobs_from_the_best() {
        let cfg = Config {
            users: users::Config::default(),
            page_sizes: vec![4_096, 65_536],
            cache_sizes: vec![100, 500_000],
            journal_modes: vec![JournalMode::Persist, JournalMode::Wal, JournalMode::Off],
            synchronous: vec![Synchronous::Off, Synchronous::Full],
            knobs: Knob::ALL.to_vec(),
            others: Vec::new(),
            variants: Vec::new(),
            variant_wasm: None,
            variants_left_out: Vec::new(),
            value_sizes: Vec::new(),
            bindings: Vec::new(),
        };
        let from = setting();
        assert_eq!(cfg.around(from, &[]), vec![from]);
        let pages = cfg.around(from, &[Knob::PageSize]);
        assert_eq!(
            pages.iter().map(|s| s.page_size).collect::<Vec<_>>(),
            [4_096, 65_536]
        );
        assert!(pages.iter().all(|s| s.cache_size == -2_000));
        let last = cfg.around(from, &[Knob::JournalMode, Knob::Synchronous]);
        assert_eq!(last.len(), 6);
        assert!(last.iter().all(|s| s.page_size == 16_384));
    }

    #[test]
    fn the_vintage_beside_is_the_last_before_the_tracker() {
        assert_eq!(
            beside_vintage(Some(Replica::R2026_07)).map(|r| r.name),
            Some("2026-05")
        );
        assert_eq!(
            beside_vintage(Some(Replica::R2026_05)).map(|r| r.name),
            None
        );
        assert_eq!(beside_vintage(None).map(|r| r.name), None);
    }
}
