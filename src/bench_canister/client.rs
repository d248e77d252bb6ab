//! The typed client of the bench canister: one method per Candid method, each reply
//! decoded with what its message cost.

use anyhow::{anyhow, Context, Result};
use candid::{CandidType, Decode, Deserialize, Encode, Principal};

use super::{
    DbBenchReport, DbBenchWrite, HeapConfig, HeapSettings, HeapStats, InsertReport, KeysStats,
    ReadReport, SqliteConfig, SqliteSettings, Stats, UpgradeStats,
};
use crate::engine::{CallOutcome, Engine, MessageReport, Metering, Reject};

type CanisterResult<T> = std::result::Result<T, String>;

/// The ids `offset`, `offset + step`, ..., `count` of them: the argument of the canister's
/// `add_users_*` and `get_users_*`, which insert or look up the rows of those ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdSequence {
    pub offset: u64,
    pub step: u64,
    pub count: u64,
}

impl IdSequence {
    pub const fn new(offset: u64, step: u64, count: u64) -> Self {
        Self {
            offset,
            step,
            count,
        }
    }

    /// The Candid arguments the canister takes: `(offset, step, count)`, three `nat64`.
    pub fn encode(&self) -> candid::Result<Vec<u8>> {
        Encode!(&self.offset, &self.step, &self.count)
    }

    /// The same arguments in Candid text (for dfx).
    pub fn candid_text(&self) -> String {
        let IdSequence {
            offset,
            step,
            count,
        } = self;
        format!("({offset} : nat64, {step} : nat64, {count} : nat64)")
    }
}

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

/// The error of a call the replica rejected, when its caller treats a reject as an error:
/// a measurement can tell it from a fault of the run ([`RejectedCall::of`]) and record the
/// scenario as failed with the replica's reason.
#[derive(Clone, Debug)]
pub struct RejectedCall {
    pub method: String,
    pub reject: Reject,
}

impl std::fmt::Display for RejectedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} was rejected: {}", self.method, self.reject)
    }
}

impl std::error::Error for RejectedCall {}

impl RejectedCall {
    /// The reject `error` is, if it is one.
    pub fn of(error: &anyhow::Error) -> Option<&RejectedCall> {
        error.downcast_ref::<RejectedCall>()
    }
}

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
    /// Sends `f`'s messages for `metering` ([`Engine::set_metering`]): for messages whose
    /// state alone counts, such as a store's fill and its collector's; then measures again.
    pub fn unmeasured<T>(&mut self, metering: Metering, f: impl FnOnce(&mut Self) -> T) -> T {
        self.engine.set_metering(metering);
        let out = f(self);
        self.engine.set_metering(Metering::Exact);
        out
    }

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
        self.send(how, method, arg)?.map_err(|r| {
            anyhow::Error::new(RejectedCall {
                method: method.to_string(),
                reject: r.reject,
            })
        })
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
    pub fn try_add_users(&mut self, store: &str, ids: IdSequence) -> Result<Attempt<InsertReport>> {
        let arg = ids.encode()?;
        self.send(MessageKind::Update, &format!("add_users_{store}"), &arg)
    }

    /// `get_users_{store}(offset, step, count)` as a query, a reject kept as such.
    pub fn try_get_users(&mut self, store: &str, ids: IdSequence) -> Result<Attempt<ReadReport>> {
        let arg = ids.encode()?;
        self.send(MessageKind::Query, &format!("get_users_{store}"), &arg)
    }

    /// `add_users_{store}(offset, step, count)`.
    pub fn add_users(&mut self, store: &str, ids: IdSequence) -> Result<Measured<InsertReport>> {
        self.update(&format!("add_users_{store}"), ids.encode()?)
    }

    /// `add_users_{store}_ids(ids)`.
    pub fn add_users_ids(&mut self, store: &str, ids: &[u64]) -> Result<Measured<InsertReport>> {
        self.update(&format!("add_users_{store}_ids"), Encode!(&ids)?)
    }

    /// `get_users_{store}(offset, step, count)` as a query, or its `_update` variant.
    pub fn get_users(
        &mut self,
        store: &str,
        ids: IdSequence,
        replicated: bool,
    ) -> Result<Measured<ReadReport>> {
        self.read(&format!("get_users_{store}"), ids.encode()?, replicated)
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
        self.configure_sqlite_of("sqlite", config)
    }

    /// `configure_{stem}(config)`: the SQLite store of stem `stem` (`configure_sqlite`,
    /// `configure_sqlite_vfs`: each canister's SQLite configures the same way).
    pub fn configure_sqlite_of(
        &mut self,
        stem: &str,
        config: &SqliteConfig,
    ) -> Result<Measured<SqliteSettings>> {
        self.update(&format!("configure_{stem}"), Encode!(config)?)
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

    /// The Motoko canister's stores and its runtime's figures.
    pub fn motoko_stats(&mut self) -> Result<MotokoStats> {
        self.uncounted_query("motoko_stats", &Encode!()?)
    }

    /// An update message of the Motoko canister that does nothing: what it costs is the
    /// collector's increment after it, if one is due.
    pub fn tick(&mut self) -> Result<Measured<u64>> {
        self.update("tick", Encode!()?)
    }
}

/// `motoko_stats`'s result (canisters/motoko/motoko.did): the rows of the Motoko canister's
/// stores and what its runtime reports (`Prim.rts_*`). Only the host reads it, so it lives
/// here, not in the crate the Rust canisters share.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct MotokoStats {
    pub map_rows: u64,
    pub pure_map_rows: u64,
    pub region_rows: u64,
    /// The region's pages (64 KiB) of stable memory.
    pub region_pages: u64,
    /// The heap's bytes, live and not yet collected.
    pub heap_size: u64,
    /// The Wasm memory's bytes.
    pub memory_size: u64,
    pub max_live_size: u64,
    pub total_allocation: u64,
    pub reclaimed: u64,
    /// The instructions of the last update message: its own (the mutator's), and those of
    /// the collector's increment after it.
    pub mutator_instructions: u64,
    pub collector_instructions: u64,
}
