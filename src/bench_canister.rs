//! The benchmark canister seen from the host: its Candid types, a typed client over any
//! [`Engine`], and building `target/canister/bench.wasm` when it is missing or stale.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{anyhow, bail, Context, Result};
use candid::{CandidType, Decode, Deserialize, Encode, Principal};

use crate::engine::{CallOutcome, Engine, MessageReport};

// The Candid records live in canisters/types, shared with the canister; re-exported so
// callers keep naming them `bench_canister::...`.
pub use bench_types::{
    BTreePages, DbBenchReport, DbBenchWrite, HeapConfig, HeapSettings, HeapStats, InsertReport,
    KeysStats, ReadReport, SqliteConfig, SqliteSettings, Stats, UpgradeStats,
};

type CanisterResult<T> = std::result::Result<T, String>;

/// A reply from the canister together with what the message cost.
#[derive(Clone, Debug)]
pub struct Measured<T> {
    pub value: CanisterResult<T>,
    pub message: MessageReport,
}

/// A typed client of the bench canister on any engine.
pub struct BenchClient<'e> {
    pub engine: &'e mut dyn Engine,
    pub canister: Principal,
    /// Instructions of every message sent through this client (for the speed line).
    pub executed_instructions: u64,
}

fn decode<T: CandidType + for<'de> Deserialize<'de>>(
    method: &str,
    out: CallOutcome,
) -> Result<Measured<T>> {
    let bytes = out
        .result
        .map_err(|r| anyhow!("{method} was rejected: {r}"))?;
    let value = Decode!(&bytes, CanisterResult<T>)
        .with_context(|| format!("decoding the reply of {method}"))?;
    Ok(Measured {
        value,
        message: out.report,
    })
}

impl<'e> BenchClient<'e> {
    /// Installs the bench canister on `engine`.
    pub fn install(engine: &'e mut dyn Engine, wasm: &[u8]) -> Result<Self> {
        let (canister, out) = engine.install(wasm, &Encode!().expect("empty args encode"))?;
        out.result
            .map_err(|r| anyhow!("installing the bench canister failed: {r}"))?;
        // Not counted as executed: an install is charged mostly for compiling the module
        // (6,000 instructions per Wasm instruction, ~12B for this canister), which runs no
        // Wasm. The speed line divides executed instructions by wall time.
        Ok(Self {
            engine,
            canister,
            executed_instructions: 0,
        })
    }

    /// A client of a canister that is already installed (after an upgrade, say).
    pub fn attach(engine: &'e mut dyn Engine, canister: Principal) -> Self {
        Self {
            engine,
            canister,
            executed_instructions: 0,
        }
    }

    fn update<T: CandidType + for<'de> Deserialize<'de>>(
        &mut self,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Measured<T>> {
        let out = self.engine.update(self.canister, method, &arg)?;
        self.executed_instructions += out.report.instructions;
        decode(method, out)
    }

    fn query<T: CandidType + for<'de> Deserialize<'de>>(
        &mut self,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Measured<T>> {
        let out = self.engine.query(self.canister, method, &arg)?;
        self.executed_instructions += out.report.instructions;
        decode(method, out)
    }

    /// `add_users_{store}(offset, step, count)`.
    pub fn add_users(
        &mut self,
        store: &str,
        offset: u64,
        step: u64,
        count: u64,
    ) -> Result<Measured<InsertReport>> {
        self.update(
            &format!("add_users_{store}"),
            Encode!(&offset, &step, &count)?,
        )
    }

    /// `add_users_{store}_ids(ids)`.
    pub fn add_users_ids(&mut self, store: &str, ids: &[u64]) -> Result<Measured<InsertReport>> {
        self.update(&format!("add_users_{store}_ids"), Encode!(&ids)?)
    }

    /// `get_users_{store}(offset, step, count)` as a query, or its `_update` variant.
    pub fn get_users(
        &mut self,
        store: &str,
        offset: u64,
        step: u64,
        count: u64,
        replicated: bool,
    ) -> Result<Measured<ReadReport>> {
        let arg = Encode!(&offset, &step, &count)?;
        if replicated {
            self.update(&format!("get_users_{store}_update"), arg)
        } else {
            self.query(&format!("get_users_{store}"), arg)
        }
    }

    /// `get_users_{store}_ids(ids)` as a query, or its `_update` variant.
    pub fn get_users_ids(
        &mut self,
        store: &str,
        ids: &[u64],
        replicated: bool,
    ) -> Result<Measured<ReadReport>> {
        let arg = Encode!(&ids)?;
        if replicated {
            self.update(&format!("get_users_{store}_ids_update"), arg)
        } else {
            self.query(&format!("get_users_{store}_ids"), arg)
        }
    }

    /// `scan_users_{store}(offset, count)` as a query, or its `_update` variant.
    pub fn scan_users(
        &mut self,
        store: &str,
        offset: u64,
        count: u64,
        replicated: bool,
    ) -> Result<Measured<ReadReport>> {
        let arg = Encode!(&offset, &count)?;
        if replicated {
            self.update(&format!("scan_users_{store}_update"), arg)
        } else {
            self.query(&format!("scan_users_{store}"), arg)
        }
    }

    pub fn configure_sqlite(&mut self, config: &SqliteConfig) -> Result<Measured<SqliteSettings>> {
        self.update("configure_sqlite", Encode!(config)?)
    }

    /// The heap store's encoding across upgrades (`candid` or `cbor`).
    pub fn configure_heap(&mut self, config: &HeapConfig) -> Result<Measured<HeapSettings>> {
        self.update("configure_heap", Encode!(config)?)
    }

    pub fn set_payload_size(&mut self, bytes: u64) -> Result<Measured<u64>> {
        self.update("set_payload_size", Encode!(&bytes)?)
    }

    pub fn clear(&mut self, store: &str) -> Result<Measured<u64>> {
        self.update(&format!("clear_{store}"), Encode!()?)
    }

    /// `dbbench_reset(store)`: empties a db_bench store and readies it.
    pub fn dbbench_reset(&mut self, store: &str) -> Result<Measured<u64>> {
        self.update("dbbench_reset", Encode!(&store)?)
    }

    pub fn dbbench_write(&mut self, arg: &DbBenchWrite) -> Result<Measured<DbBenchReport>> {
        self.update("dbbench_write", Encode!(arg)?)
    }

    /// `dbbench_read_random(store, keys)` (a query).
    pub fn dbbench_read_random(
        &mut self,
        store: &str,
        keys: &[u64],
    ) -> Result<Measured<DbBenchReport>> {
        self.query("dbbench_read_random", Encode!(&store, &keys)?)
    }

    /// `dbbench_read_seq(store, start, count)` (a query).
    pub fn dbbench_read_seq(
        &mut self,
        store: &str,
        start: u64,
        count: u64,
    ) -> Result<Measured<DbBenchReport>> {
        self.query("dbbench_read_seq", Encode!(&store, &start, &count)?)
    }

    pub fn keys_reset(&mut self, store: &str, key_type: &str) -> Result<Measured<u64>> {
        self.update("keys_reset", Encode!(&store, &key_type)?)
    }

    pub fn keys_insert(
        &mut self,
        store: &str,
        key_type: &str,
        keys: &[Vec<u8>],
        value_size: u64,
    ) -> Result<Measured<DbBenchReport>> {
        self.update(
            "keys_insert",
            Encode!(&store, &key_type, &keys, &value_size)?,
        )
    }

    /// `keys_lookup` (a query).
    pub fn keys_lookup(
        &mut self,
        store: &str,
        key_type: &str,
        keys: &[Vec<u8>],
    ) -> Result<Measured<DbBenchReport>> {
        self.query("keys_lookup", Encode!(&store, &key_type, &keys)?)
    }

    pub fn keys_stats(&mut self, store: &str, key_type: &str) -> Result<CanisterResult<KeysStats>> {
        let out = self
            .engine
            .query(self.canister, "keys_stats", &Encode!(&store, &key_type)?)?;
        let bytes = out
            .result
            .map_err(|r| anyhow!("keys_stats was rejected: {r}"))?;
        Ok(Decode!(&bytes, CanisterResult<KeysStats>)?)
    }

    /// `sysbench_reset(store, rows)`: empties the store (SQLite: recreates the tables).
    pub fn sysbench_reset(&mut self, store: &str, rows: u64) -> Result<Measured<u64>> {
        self.update("sysbench_reset", Encode!(&store, &rows)?)
    }

    /// `sysbench_prefill(store, first, count, rows)`: sbtest1 ids first..first+count.
    pub fn sysbench_prefill(
        &mut self,
        store: &str,
        first: u64,
        count: u64,
        rows: u64,
    ) -> Result<Measured<u64>> {
        self.update("sysbench_prefill", Encode!(&store, &first, &count, &rows)?)
    }

    /// `sysbench_run(store, workload, params)`: one event of one workload, an update.
    pub fn sysbench_run(
        &mut self,
        store: &str,
        workload: &str,
        params: &[u64],
    ) -> Result<Measured<DbBenchReport>> {
        self.update("sysbench_run", Encode!(&store, &workload, &params)?)
    }

    pub fn stats(&mut self) -> Result<Stats> {
        let out = self.engine.query(self.canister, "stats", &Encode!()?)?;
        let bytes = out.result.map_err(|r| anyhow!("stats was rejected: {r}"))?;
        Ok(Decode!(&bytes, Stats)?)
    }

    /// The heap store's rows, the Wasm heap's bytes and the encoding in force.
    pub fn heap_stats(&mut self) -> Result<HeapStats> {
        let out = self
            .engine
            .query(self.canister, "heap_stats", &Encode!()?)?;
        let bytes = out
            .result
            .map_err(|r| anyhow!("heap_stats was rejected: {r}"))?;
        Ok(Decode!(&bytes, HeapStats)?)
    }

    /// What the last upgrade's hooks counted inside themselves.
    pub fn upgrade_stats(&mut self) -> Result<UpgradeStats> {
        let out = self
            .engine
            .query(self.canister, "upgrade_stats", &Encode!()?)?;
        let bytes = out
            .result
            .map_err(|r| anyhow!("upgrade_stats was rejected: {r}"))?;
        Ok(Decode!(&bytes, UpgradeStats)?)
    }
}

/// The project root, where `scripts/build-canister.sh` lives.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the build script writes the canister module.
pub fn default_wasm_path() -> PathBuf {
    project_root().join("target/canister/bench.wasm")
}

fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return meta.modified().ok();
    }
    let mut newest = None;
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        newest = newest.max(newest_mtime(&entry.path()));
    }
    newest
}

/// Whether the module is missing or older than any of its sources.
pub fn canister_is_stale(root: &Path, wasm: &Path) -> bool {
    let Some(built) = std::fs::metadata(wasm).ok().and_then(|m| m.modified().ok()) else {
        return true;
    };
    [
        "canisters/Cargo.toml",
        "canisters/Cargo.lock",
        "canisters/bench",
        "canisters/types",
        "scripts/build-canister.sh",
        "scripts/wasi2ic-post",
    ]
    .iter()
    .filter_map(|p| newest_mtime(&root.join(p)))
    .any(|t| t > built)
}

/// Builds the canister with `scripts/build-canister.sh` if it is missing or stale, and
/// returns the module bytes. From the icbench binary, the script converts the module with
/// this binary (`icbench wasi2ic-post`); from elsewhere, see [`ensure_built_with`].
pub fn ensure_built(quiet: bool) -> Result<Vec<u8>> {
    let exe = std::env::current_exe().ok();
    let icbench = exe.filter(|p| p.file_stem().is_some_and(|s| s == "icbench"));
    ensure_built_with(quiet, icbench.as_deref())
}

/// [`ensure_built`] with the icbench binary the script converts the module with
/// (`ICBENCH_BIN`); tests pass `CARGO_BIN_EXE_icbench`. With `None` the script finds or
/// builds a converter itself.
pub fn ensure_built_with(quiet: bool, icbench_bin: Option<&Path>) -> Result<Vec<u8>> {
    let root = project_root();
    let wasm = default_wasm_path();
    if canister_is_stale(&root, &wasm) {
        if !quiet {
            eprintln!("building the bench canister (scripts/build-canister.sh)...");
        }
        let mut script = Command::new("bash");
        script
            .arg(root.join("scripts/build-canister.sh"))
            .current_dir(&root);
        if let Some(bin) = icbench_bin {
            script.env("ICBENCH_BIN", bin);
        }
        let status = script
            .status()
            .context("running scripts/build-canister.sh")?;
        if !status.success() {
            bail!("scripts/build-canister.sh failed ({status}); see its output above");
        }
    }
    std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
}
