//! The benchmark canister seen from the host: its Candid types, a typed client over any
//! [`Engine`], and which module runs: the committed one this binary embeds (crate
//! icbench-canister), or in a checkout whose canister sources moved on, a build of them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{anyhow, bail, Context, Result};
use candid::{CandidType, Decode, Deserialize, Encode, Principal};

use crate::canister_sources::{self, CANISTER_SOURCES};
use crate::engine::{CallOutcome, Engine, MessageReport, Reject};

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
    /// The method name's and the Candid argument's bytes: what an ingress message of this
    /// call carries at least (the replica's per-byte ingress fee applies to them).
    pub request_bytes: u64,
}

/// A typed client of the bench canister on any engine.
pub struct BenchClient<'e> {
    pub engine: &'e mut dyn Engine,
    pub canister: Principal,
    /// Instructions of every message sent through this client (for the speed line).
    pub executed_instructions: u64,
}

/// A message the replica rejected (a limit, a trap) and what it cost up to then.
#[derive(Clone, Debug)]
pub struct Rejected {
    pub reject: Reject,
    pub message: MessageReport,
}

/// The reply of a call that may hit the replica's limits: the search for the largest
/// batch that fits expects rejects, every other caller treats them as errors.
pub type Attempt<T> = std::result::Result<Measured<T>, Rejected>;

/// How a message is sent: replicated (its changes kept) or as a query.
#[derive(Clone, Copy)]
enum MessageKind {
    Update,
    Query,
}

/// What a canister method replies, in Candid.
trait Reply: CandidType + for<'de> Deserialize<'de> {}
impl<T: CandidType + for<'de> Deserialize<'de>> Reply for T {}

fn decode_attempt<T: Reply>(method: &str, arg: &[u8], out: CallOutcome) -> Result<Attempt<T>> {
    let bytes = match out.result {
        Ok(bytes) => bytes,
        Err(reject) => {
            return Ok(Err(Rejected {
                reject,
                message: out.report,
            }));
        }
    };
    let value = Decode!(&bytes, CanisterResult<T>)
        .with_context(|| format!("decoding the reply of {method}"))?;
    Ok(Ok(Measured {
        value,
        message: out.report,
        request_bytes: (method.len() + arg.len()) as u64,
    }))
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

    /// Sends one message, counting its instructions; a reject is kept as such.
    fn send<T: Reply>(&mut self, how: MessageKind, method: &str, arg: &[u8]) -> Result<Attempt<T>> {
        let out = match how {
            MessageKind::Update => self.engine.update(self.canister, method, arg)?,
            MessageKind::Query => self.engine.query(self.canister, method, arg)?,
        };
        self.executed_instructions += out.report.instructions;
        decode_attempt(method, arg, out)
    }

    /// Sends one message; a reject is an error.
    fn send_accepted<T: Reply>(
        &mut self,
        how: MessageKind,
        method: &str,
        arg: &[u8],
    ) -> Result<Measured<T>> {
        self.send(how, method, arg)?
            .map_err(|r| anyhow!("{method} was rejected: {}", r.reject))
    }

    fn update<T: Reply>(&mut self, method: &str, arg: Vec<u8>) -> Result<Measured<T>> {
        self.send_accepted(MessageKind::Update, method, &arg)
    }

    fn query<T: Reply>(&mut self, method: &str, arg: Vec<u8>) -> Result<Measured<T>> {
        self.send_accepted(MessageKind::Query, method, &arg)
    }

    /// `method` as a query, or its `{method}_update` variant (an update) when `replicated`.
    fn read<T: Reply>(
        &mut self,
        method: &str,
        arg: Vec<u8>,
        replicated: bool,
    ) -> Result<Measured<T>> {
        if replicated {
            self.update(&format!("{method}_update"), arg)
        } else {
            self.query(method, arg)
        }
    }

    /// A query read beside the measurements, its instructions not counted; a reject is an
    /// error.
    fn uncounted_query<T: Reply>(&mut self, method: &str, arg: &[u8]) -> Result<T> {
        let out = self.engine.query(self.canister, method, arg)?;
        let bytes = out
            .result
            .map_err(|r| anyhow!("{method} was rejected: {r}"))?;
        Ok(Decode!(&bytes, T)?)
    }

    /// `add_users_{store}(offset, step, count)`, a reject kept as such.
    pub fn try_add_users(
        &mut self,
        store: &str,
        offset: u64,
        step: u64,
        count: u64,
    ) -> Result<Attempt<InsertReport>> {
        let arg = Encode!(&offset, &step, &count)?;
        self.send(MessageKind::Update, &format!("add_users_{store}"), &arg)
    }

    /// `get_users_{store}(offset, step, count)` as a query, a reject kept as such.
    pub fn try_get_users(
        &mut self,
        store: &str,
        offset: u64,
        step: u64,
        count: u64,
    ) -> Result<Attempt<ReadReport>> {
        let arg = Encode!(&offset, &step, &count)?;
        self.send(MessageKind::Query, &format!("get_users_{store}"), &arg)
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
        self.read(&format!("get_users_{store}"), arg, replicated)
    }

    /// `get_users_{store}_ids(ids)` as a query, or its `_update` variant.
    pub fn get_users_ids(
        &mut self,
        store: &str,
        ids: &[u64],
        replicated: bool,
    ) -> Result<Measured<ReadReport>> {
        self.read(
            &format!("get_users_{store}_ids"),
            Encode!(&ids)?,
            replicated,
        )
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
        self.read(&format!("scan_users_{store}"), arg, replicated)
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
        self.uncounted_query("keys_stats", &Encode!(&store, &key_type)?)
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
        self.uncounted_query("stats", &Encode!()?)
    }

    /// The heap store's rows, the Wasm heap's bytes and the encoding in force.
    pub fn heap_stats(&mut self) -> Result<HeapStats> {
        self.uncounted_query("heap_stats", &Encode!()?)
    }

    /// What the last upgrade's hooks counted inside themselves.
    pub fn upgrade_stats(&mut self) -> Result<UpgradeStats> {
        self.uncounted_query("upgrade_stats", &Encode!()?)
    }
}

/// The project root, where `scripts/build-canister.sh` lives.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The committed module of the current sources (the binary embeds it: the crate
/// icbench-canister) and the file that says which sources it was built from.
pub const PREBUILT_WASM: &str = "canisters/prebuilt/bench.wasm";
pub const PREBUILT_SOURCES: &str = "canisters/prebuilt/bench.sources";

fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return meta.modified().ok();
    }
    let mut newest = None;
    for entry in std::fs::read_dir(path).ok()?.flatten() {
        if canister_sources::skipped(&entry.file_name()) {
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
    CANISTER_SOURCES
        .iter()
        .filter_map(|p| newest_mtime(&root.join(p)))
        .any(|t| t > built)
}

/// SHA-256 over the canister's sources (each file's relative path, length and bytes, in
/// path order): equal hashes mean the same module, since the build is reproducible.
pub fn canister_sources_sha256(root: &Path) -> Result<String> {
    canister_sources::sha256(root).map_err(|e| anyhow!(e))
}

/// The contents of [`PREBUILT_SOURCES`] for a module built from sources hashing to `sources`.
#[cfg(test)]
fn prebuilt_record(sources: &str, wasm: &[u8]) -> String {
    Module::DEFAULT.record(sources, wasm)
}

/// The committed default module, if it was built from exactly the current sources and is
/// intact; `Ok(None)` when the sources moved on (the module must then be built).
pub fn prebuilt_for_current_sources(root: &Path) -> Result<Option<Vec<u8>>> {
    Module::DEFAULT.prebuilt_for_current_sources(root)
}

/// Builds every module of [`Module::ALL`] from its sources (`scripts/build-canister.sh`,
/// whatever the mtimes say) and commits each as the prebuilt module of these sources.
pub fn update_prebuilt(icbench_bin: Option<&Path>) -> Result<()> {
    let root = project_root();
    for module in Module::ALL {
        run_build_script(&root, icbench_bin, module.variant)?;
        let built = root.join(module.built);
        let wasm = std::fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
        let sources = canister_sources_sha256(&root)?;
        std::fs::create_dir_all(root.join("canisters/prebuilt"))?;
        std::fs::write(root.join(module.prebuilt_wasm), &wasm)
            .with_context(|| format!("writing {}", module.prebuilt_wasm))?;
        std::fs::write(
            root.join(module.prebuilt_sources),
            module.record(&sources, &wasm),
        )
        .with_context(|| format!("writing {}", module.prebuilt_sources))?;
    }
    Ok(())
}

/// `scripts/build-canister.sh [variant]` ("": the default module).
fn run_build_script(root: &Path, icbench_bin: Option<&Path>, variant: &str) -> Result<()> {
    let mut script = Command::new("bash");
    script
        .arg(root.join("scripts/build-canister.sh"))
        .current_dir(root);
    if !variant.is_empty() {
        script.arg(variant);
    }
    if let Some(bin) = icbench_bin {
        script.env("ICBENCH_BIN", bin);
    }
    let status = script
        .status()
        .context("running scripts/build-canister.sh")?;
    if !status.success() {
        bail!("scripts/build-canister.sh failed ({status}); see its output above");
    }
    Ok(())
}

/// The bench canister module a flag (`--wasm`, `--tune-wasm`) names, read and checked: the
/// error is one line naming the flag, the file and what is wrong.
pub fn read_module_flag(flag: &str, path: &Path) -> Result<Vec<u8>> {
    let wasm = std::fs::read(path)
        .map_err(|e| anyhow!("{flag} {}: cannot read it: {e}", path.display()))?;
    check_module(&wasm).map_err(|e| anyhow!("{flag} {}: {e:#}", path.display()))?;
    Ok(wasm)
}

/// Exports every suite calls, whatever the stores: a module without them is not a bench
/// canister (or not one this icbench can drive).
const REQUIRED_EXPORTS: [&str; 3] = [
    "canister_update set_payload_size",
    "canister_query stats",
    "canister_update add_users_btree",
];

/// Checks that `wasm` (raw or gzipped) is a valid module with the bench canister's methods,
/// before any work; the error is one line (see [`crate::engine::embedded::check_module`]).
pub fn check_module(wasm: &[u8]) -> Result<()> {
    let exports = crate::engine::embedded::check_module(wasm)?;
    let missing: Vec<&str> = REQUIRED_EXPORTS
        .into_iter()
        .filter(|e| !exports.iter().any(|x| x == e))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "not the bench canister: a valid Wasm module without the export{} `{}` (build it with scripts/build-canister.sh, or leave --wasm out)",
            if missing.len() > 1 { "s" } else { "" },
            missing.join("`, `")
        );
    }
    Ok(())
}

/// How a module this binary embeds relates to the canister sources, as build.rs found
/// them: `current` (the checkout's sources are the ones the module was built from),
/// `stale` (they changed since: the module must be built from them), or `packaged` (built
/// from the published crate, which has no canister sources: the record vouches for the
/// module, and .ci/run rebuilds it from the sources and compares the bytes before release).
pub const EMBEDDED_STATE: &str = env!("ICBENCH_PREBUILT");

/// The bench canister module inside this binary (crate icbench-canister), unless the
/// checkout it was built from had canister sources the module is not of.
pub fn embedded_module() -> Option<&'static [u8]> {
    Module::DEFAULT.embedded()
}

/// The default module of the current sources ([`Module::ensure_built_with`]).
pub fn ensure_built(quiet: bool) -> Result<Vec<u8>> {
    Module::DEFAULT.ensure_built(quiet)
}

/// [`ensure_built`] with the icbench binary the script converts the module with
/// (`ICBENCH_BIN`); tests pass `CARGO_BIN_EXE_icbench`. With `None` the script finds or
/// builds a converter itself.
pub fn ensure_built_with(quiet: bool, icbench_bin: Option<&Path>) -> Result<Vec<u8>> {
    Module::DEFAULT.ensure_built_with(quiet, icbench_bin)
}

/// `--build-canister`: the default module built now from the checkout's canister sources.
pub fn build_from_sources(quiet: bool) -> Result<Vec<u8>> {
    Module::DEFAULT.build_from_sources(quiet)
}

fn current_icbench() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok();
    exe.filter(|p| p.file_stem().is_some_and(|s| s == "icbench"))
}

/// The checkout this binary was built from, if it is still there with the canister's build
/// script (a packaged crate has none).
fn checkout_root() -> Option<PathBuf> {
    let root = project_root();
    root.join("scripts/build-canister.sh")
        .is_file()
        .then_some(root)
}

/// A canister module icbench runs: built from the canister's sources (the same sources for
/// every module) by `scripts/build-canister.sh [variant]`, with the variant's cargo feature of
/// canisters/bench, committed under canisters/prebuilt with a sources record of its own, and
/// embedded in the binary (crate icbench-canister).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module {
    /// The build script's argument and the cargo feature ("": the default module).
    pub variant: &'static str,
    /// Where the build script writes it, relative to the project root.
    pub built: &'static str,
    /// The committed module and its sources record, relative to the project root.
    pub prebuilt_wasm: &'static str,
    pub prebuilt_sources: &'static str,
    /// The committed module as this binary embeds it, and build.rs's verdict on it
    /// (see [`EMBEDDED_STATE`]).
    embedded: &'static [u8],
    embedded_state: &'static str,
}

impl Module {
    /// The bench canister: every suite runs it.
    pub const DEFAULT: Module = Module {
        variant: "",
        built: "target/canister/bench.wasm",
        prebuilt_wasm: PREBUILT_WASM,
        prebuilt_sources: PREBUILT_SOURCES,
        embedded: icbench_canister::BENCH_WASM,
        embedded_state: EMBEDDED_STATE,
    };
    /// The tune variant (feature `tune`): talc as the global allocator and the store
    /// `btree_bounded` (a bounded value type); the tune suite measures it beside the default.
    pub const TUNE: Module = Module {
        variant: "tune",
        built: "target/canister/bench-tune.wasm",
        prebuilt_wasm: "canisters/prebuilt/bench-tune.wasm",
        prebuilt_sources: "canisters/prebuilt/bench-tune.sources",
        embedded: icbench_canister::BENCH_TUNE_WASM,
        embedded_state: env!("ICBENCH_PREBUILT_TUNE"),
    };
    /// Every module committed under canisters/prebuilt.
    pub const ALL: [Module; 2] = [Module::DEFAULT, Module::TUNE];

    /// The module as this binary embeds it, unless the checkout it was built from had
    /// canister sources the module is not of.
    pub fn embedded(&self) -> Option<&'static [u8]> {
        (self.embedded_state != "stale").then_some(self.embedded)
    }

    /// The committed module, if it was built from exactly the current sources and is intact;
    /// `Ok(None)` when the sources moved on (the module must then be built).
    pub fn prebuilt_for_current_sources(&self, root: &Path) -> Result<Option<Vec<u8>>> {
        let (wasm_rel, sources_rel) = (self.prebuilt_wasm, self.prebuilt_sources);
        let Ok(record) = std::fs::read_to_string(root.join(sources_rel)) else {
            return Ok(None);
        };
        let wasm = std::fs::read(root.join(wasm_rel))
            .with_context(|| format!("reading {wasm_rel} (named by {sources_rel})"))?;
        let sources = canister_sources_sha256(root)?;
        if self.record(&sources, &wasm) == record {
            return Ok(Some(wasm));
        }
        if record.contains(&format!("sources-sha256 {sources}\n")) {
            // Sources match but the bytes do not: a damaged checkout (an LFS pointer, a bad
            // merge). Never run it; building gives the right module.
            eprintln!(
                "warning: {wasm_rel} is not the module {sources_rel} names; building the canister instead"
            );
        }
        Ok(None)
    }

    /// The contents of its sources record for a module built from sources hashing to
    /// `sources`.
    fn record(&self, sources: &str, wasm: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        format!(
            "# The sources {} is built from; written by\n\
             # scripts/update-prebuilt-canister.sh, checked by the tests and .ci/run.\n\
             sources-sha256 {sources}\n\
             module-sha256 {}\n",
            self.prebuilt_wasm,
            hex::encode(Sha256::digest(wasm))
        )
    }

    /// The module of the current sources: the one this binary embeds, which needs no file of
    /// the source tree; or, when the checkout's canister sources moved on since the
    /// committed module (build.rs says so), `self.built` if it is newer than every source,
    /// else a build with `scripts/build-canister.sh`. The script converts the module with
    /// `icbench_bin` (`icbench wasi2ic-post`); with `None` it finds or builds a converter.
    pub fn ensure_built_with(&self, quiet: bool, icbench_bin: Option<&Path>) -> Result<Vec<u8>> {
        if let Some(wasm) = self.embedded() {
            if !quiet && *self == Module::DEFAULT {
                eprintln!("bench canister: the module built into icbench ({EMBEDDED_STATE})");
            }
            return Ok(wasm.to_vec());
        }
        let root = checkout_root().ok_or_else(|| {
            anyhow!(
                "this icbench was built from a checkout whose canister sources differ from its committed \
                 module ({}), and that checkout ({}) is gone: rebuild icbench, or pass --wasm",
                self.prebuilt_wasm,
                project_root().display()
            )
        })?;
        let wasm = root.join(self.built);
        if canister_is_stale(&root, &wasm) {
            if !quiet {
                eprintln!(
                    "building the bench canister (scripts/build-canister.sh {}): its sources changed since {}...",
                    self.variant, self.prebuilt_wasm
                );
            }
            run_build_script(&root, icbench_bin, self.variant)?;
        }
        std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
    }

    /// [`Module::ensure_built_with`] from the icbench binary.
    pub fn ensure_built(&self, quiet: bool) -> Result<Vec<u8>> {
        self.ensure_built_with(quiet, current_icbench().as_deref())
    }

    /// The module built now from the checkout's canister sources (scripts/build-canister.sh,
    /// incremental), whatever this binary embeds.
    pub fn build_from_sources(&self, quiet: bool) -> Result<Vec<u8>> {
        let root = checkout_root().ok_or_else(|| {
            anyhow!(
                "--build-canister needs the checkout icbench was built from ({}), and it is not there \
                 (an installed icbench runs the module it embeds: leave --build-canister out)",
                project_root().display()
            )
        })?;
        if !quiet {
            eprintln!(
                "building the bench canister (scripts/build-canister.sh {})...",
                self.variant
            );
        }
        run_build_script(&root, current_icbench().as_deref(), self.variant)?;
        let wasm = root.join(self.built);
        std::fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project root with one file of each source kind, in a directory of its own.
    fn fake_root(name: &str) -> PathBuf {
        let root = crate::testing::fresh_temp_dir("prebuilt", name);
        for rel in CANISTER_SOURCES {
            let path = root.join(rel);
            if rel.ends_with(".toml") || rel.ends_with(".lock") || rel.ends_with(".sh") {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, rel.as_bytes()).unwrap();
            } else {
                std::fs::create_dir_all(path.join("src")).unwrap();
                std::fs::write(path.join("src/lib.rs"), b"fn f() {}").unwrap();
                // Build output and dotfiles are not sources.
                std::fs::create_dir_all(path.join("target")).unwrap();
                std::fs::write(path.join("target/x"), b"built").unwrap();
                std::fs::write(path.join(".swp"), b"editor").unwrap();
            }
        }
        root
    }

    fn commit_prebuilt(root: &Path, wasm: &[u8]) {
        let sources = canister_sources_sha256(root).unwrap();
        std::fs::create_dir_all(root.join("canisters/prebuilt")).unwrap();
        std::fs::write(root.join(PREBUILT_WASM), wasm).unwrap();
        std::fs::write(root.join(PREBUILT_SOURCES), prebuilt_record(&sources, wasm)).unwrap();
    }

    #[test]
    fn the_sources_hash_sees_every_source_and_ignores_build_output() {
        let root = fake_root("hash");
        let before = canister_sources_sha256(&root).unwrap();
        std::fs::write(root.join("canisters/bench/target/x"), b"rebuilt").unwrap();
        std::fs::write(root.join("canisters/bench/.swp"), b"edited").unwrap();
        assert_eq!(canister_sources_sha256(&root).unwrap(), before);
        for changed in [
            "canisters/types/src/lib.rs",
            "rust-toolchain.toml",
            "scripts/build-canister.sh",
        ] {
            let original = std::fs::read(root.join(changed)).unwrap();
            std::fs::write(root.join(changed), b"changed").unwrap();
            assert_ne!(canister_sources_sha256(&root).unwrap(), before, "{changed}");
            std::fs::write(root.join(changed), original).unwrap();
        }
        // A renamed file is a different source even with the same bytes.
        std::fs::rename(
            root.join("scripts/wasi2ic-post/src/lib.rs"),
            root.join("scripts/wasi2ic-post/src/main.rs"),
        )
        .unwrap();
        assert_ne!(canister_sources_sha256(&root).unwrap(), before);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_prebuilt_module_is_used_only_for_its_own_sources_and_bytes() {
        let root = fake_root("prebuilt");
        assert_eq!(
            prebuilt_for_current_sources(&root).unwrap(),
            None,
            "nothing committed"
        );
        commit_prebuilt(&root, b"\0asm module");
        assert_eq!(
            prebuilt_for_current_sources(&root).unwrap().as_deref(),
            Some(&b"\0asm module"[..])
        );
        // Damaged bytes under a matching record are never run.
        std::fs::write(root.join(PREBUILT_WASM), b"\0asm damaged").unwrap();
        assert_eq!(prebuilt_for_current_sources(&root).unwrap(), None);
        // Sources that moved on need a build.
        commit_prebuilt(&root, b"\0asm module");
        std::fs::write(root.join("canisters/bench/src/lib.rs"), b"fn g() {}").unwrap();
        assert_eq!(prebuilt_for_current_sources(&root).unwrap(), None);
        // A record without its module is an error that names the file.
        commit_prebuilt(&root, b"\0asm module");
        std::fs::remove_file(root.join(PREBUILT_WASM)).unwrap();
        let err = prebuilt_for_current_sources(&root).unwrap_err();
        assert!(format!("{err:#}").contains(PREBUILT_WASM), "{err:#}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn each_module_is_vouched_for_by_its_own_record_only() {
        let root = fake_root("modules");
        for m in Module::ALL {
            assert_eq!(m.prebuilt_for_current_sources(&root).unwrap(), None);
        }
        let sources = canister_sources_sha256(&root).unwrap();
        let tune = Module::TUNE;
        std::fs::create_dir_all(root.join("canisters/prebuilt")).unwrap();
        std::fs::write(root.join(tune.prebuilt_wasm), b"\0asm tune").unwrap();
        std::fs::write(
            root.join(tune.prebuilt_sources),
            tune.record(&sources, b"\0asm tune"),
        )
        .unwrap();
        assert_eq!(
            tune.prebuilt_for_current_sources(&root).unwrap().as_deref(),
            Some(&b"\0asm tune"[..])
        );
        assert_eq!(
            Module::DEFAULT.prebuilt_for_current_sources(&root).unwrap(),
            None
        );
        // The variant's record, copied over the default's, does not vouch for its bytes.
        std::fs::copy(
            root.join(tune.prebuilt_sources),
            root.join(PREBUILT_SOURCES),
        )
        .unwrap();
        std::fs::write(root.join(PREBUILT_WASM), b"\0asm tune").unwrap();
        assert_eq!(
            Module::DEFAULT.prebuilt_for_current_sources(&root).unwrap(),
            None
        );
        assert!(tune
            .record(&sources, b"x")
            .starts_with("# The sources canisters/prebuilt/bench-tune.wasm is built from"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
