//! The embedded IC engine: canister Wasm, instrumented exactly as the replica instruments
//! it, executed by wasmtime with the replica's System API, message semantics and limits.
//! No external binary is needed, and the same calls give the same counts and state.
//!
//! This file holds the engine's state (its canisters, their saved states, its snapshots)
//! and implements [`Engine`] on its parts. A canister's lifecycle: [`install`] (install,
//! upgrade, reinstall), [`snapshot`] (saved states, snapshots, forks), [`exported_state`]
//! (a state to and from bytes); a message: [`execute`] runs one on an [`instance`] of the
//! [`module`] ([`module`] loads it), [`tasks`] the rounds' own (global timers, heartbeats);
//! beneath them [`memory`] is the memory tracker, [`system_api`] the System API and
//! [`profiler`] the instruction profiles.

mod calls;
mod execute;
mod exported_state;
mod install;
mod instance;
#[doc(hidden)] // for the tests and benchmarks (the library's surface: lib.rs)
pub mod memory;
pub(crate) mod module;
mod process;
mod profiler;
mod snapshot;
mod state_files;
#[doc(hidden)]
pub mod system_api;
mod tasks;

pub use calls::{TreeKind, TreeMessage};
#[doc(hidden)] // for the canister client, which reads a module's sections
pub use module::decompress;
pub use module::{
    check_module, load_module, load_module_cached, load_module_kept, metadata, perf_map_if_asked,
    LoadedModule, ModuleFacts, Origin,
};
use module::{load_variant, module_key, variant, wasmtime_engine};

use self::execute::{reject, Entry};
use self::instance::{grow_heap, heap_bytes, instantiate, on_large_stack, Instance};
pub use self::instance::{spawn_scoped, HOST_STACK};
use self::snapshot::frozen_committed;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use candid::Principal;
use sha2::{Digest, Sha256};
use wasmtime::unix::StoreExt;
use wasmtime::{Extern, Global, Memory, Mutability, Store, Val};

use self::memory::charges::Tracker;
use self::memory::heap::{self, Arming, HeapRegion};
use self::memory::image::{FrozenHeap, HeapImage, PageSet};
use self::memory::stable::{StableImage, StableMemory, WASM_PAGE};
use self::memory::OS_PAGE;
use self::system_api::{ApiType, HostState, HostTrap, Message, MAX_STABLE_BYTES};
use super::cost::{self, Host, Limits, MemoryTracker, Replica};
use super::counter_reads::{CounterRead, CounterReads};
use super::disk_cache;
use super::instrument::{self, Counter};
use super::page_map::{MemoryPages, PageMap};
use super::profile::{self, Profile};
use super::{
    CallOutcome, Engine, ErrorCode, ExportedState, InstallCode, InstallMode, InstallStage,
    MessageReport, Metering, PageCounts, Profiling, Reject, SharedSnapshot, SnapshotId, StateBytes,
    UpgradeOptions, WasmMemoryPersistence,
};

/// The first canister id of PocketIC's single application subnet, so that error texts and
/// `canister_self` match what canbench users see there.
const FIRST_CANISTER_ID: &str = "lxzze-o7777-77777-aaaaa-cai";
/// A fixed start time (2026-01-01T00:00:00Z) so that runs are reproducible.
const GENESIS_TIME_NS: u64 = 1_767_225_600_000_000_000;
/// Cycles every canister holds, as canbench gives it.
const INITIAL_CYCLES: u128 = 1_000_000_000_000_000;
/// The replica's Wasm stack limit (`MAX_WASM_STACK_SIZE`, 5 MiB).
const MAX_WASM_STACK: usize = 5 * 1024 * 1024;

/// What a new module starts on: stable memory (empty at install), and at an upgrade with
/// `wasm_memory_persistence: Keep` the old heap.
struct Carried {
    stable: StableImage,
    heap: Option<HeapImage>,
}

/// What every canister state consists of, for snapshots and for rolling back.
#[derive(Clone)]
struct SavedState {
    module: Arc<LoadedModule>,
    /// Frozen: engines that load the state map it copy-on-write instead of copying it.
    heap: Arc<FrozenHeap>,
    globals: Vec<Val>,
    stable: StableImage,
    certified_data: Vec<u8>,
    global_timer: u64,
    /// The engine's clock when the state was saved. Restoring a snapshot sets the clock
    /// back to it, so that what a restored canister's messages see (`ic0.time`, its timer)
    /// does not depend on what the engine ran in between: a pool's worker runs tasks in
    /// the order the scheduler hands them out.
    time_ns: u64,
}

struct Canister {
    module: Option<Arc<LoadedModule>>,
    live: Option<Instance>,
    /// The pages of the heap that were ever written (every other page is zero): what a
    /// snapshot copies. Between messages the live heap is the committed one; a message
    /// rolls back by the old bytes its first writes kept (memory/heap.rs), not by a second copy.
    heap_written: PageSet,
    version: u64,
    /// The saved state the live instance was last loaded from, and the heap pages
    /// committed since: restoring the same state again copies back only those pages.
    since_load: Option<SinceLoad>,
    /// Why its state is gone: a message failed that had nothing to roll back with
    /// ([`Metering::StateOnly`]); it has no instance from then on.
    lost: Option<String>,
}

impl Canister {
    /// A canister without a module at `version`: before its install, or after a failed one.
    fn empty(version: u64) -> Self {
        Canister {
            module: None,
            live: None,
            heap_written: PageSet::default(),
            version,
            since_load: None,
            lost: None,
        }
    }

    /// Its live instance, to run a message on or set its timer; `id` is its own, named in
    /// the error.
    fn instance(&mut self, id: Principal) -> Result<&mut Instance> {
        match self.live.as_mut() {
            Some(inst) => Ok(inst),
            None => Err(no_instance(id, &self.lost)),
        }
    }
}

/// Why canister `id` has no instance: it lost its state (`lost` says how), or it has none.
fn no_instance(id: Principal, lost: &Option<String>) -> anyhow::Error {
    match lost {
        Some(why) => anyhow!("canister {id} lost its state: {why}"),
        None => anyhow!("canister {id} has no module installed"),
    }
}

/// `heap` identifies the saved state (snapshots and their clones share it, module included).
struct SinceLoad {
    heap: Arc<FrozenHeap>,
    pages: HashSet<u32>,
}

/// A snapshot shared between engines: the state, and the canister's version when it was
/// shared (for an engine that creates the canister to take it in).
struct Shared {
    saved: Arc<SavedState>,
    version: u64,
}

/// The embedded engine. Execution is single-threaded per engine; several engines may run
/// in parallel threads.
pub struct EmbeddedEngine {
    limits: Limits,
    canisters: HashMap<Principal, Canister>,
    /// Behind `Arc`: a fork shares them with its parent instead of copying them.
    /// `SnapshotId(i)` is `snapshots[i]`; `None` once [`Engine::forget`] released it.
    snapshots: Vec<Option<(Principal, Arc<SavedState>)>>,
    time_ns: u64,
    next_canister: u64,
    print_log: bool,
    counter: Counter,
    profiling: Profiling,
    /// The dated rules charged by where the replica changed them.
    replica: Replica,
    /// The machine whose OS pages the charges count.
    host: Host,
    /// What `ic0.performance_counter` returns and keeps in the next messages, and the
    /// reads of the last message.
    counter_reads: CounterReads,
    last_counter_reads: Vec<CounterRead>,
    /// The calls the last message sent (none when it trapped), its answer and whether it
    /// trapped, for the call tree ([`calls`]) to deliver.
    sent: Vec<system_api::OutCall>,
    answer: Option<system_api::Response>,
    trapped: bool,
    /// The messages of the last update's call tree.
    tree: Vec<calls::TreeMessage>,
    /// [`Engine::set_metering`].
    metering: Metering,
    /// The subnet's `expected_compiled_wasms`: the hash of every module a successful
    /// install_code installed since the last [`Engine::checkpoint`]. Subnet state, not a
    /// canister's: restoring a snapshot leaves it alone.
    expected_compiled_wasms: HashSet<[u8; 32]>,
    /// Who sends the ingress messages ([`EmbeddedEngine::set_caller`]); None: anonymous.
    caller: Option<Vec<u8>>,
    /// The replies of canisters that are not on the engine ([`EmbeddedEngine::set_reply`]),
    /// by callee and method.
    replies: HashMap<(Principal, String), Vec<u8>>,
    /// The settings of the canisters made from now on ([`EmbeddedEngine::set_settings`]).
    settings: Settings,
}

/// A canister's cycles and controllers: what a canister made on the engine starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Its cycles balance (`ic0.canister_cycle_balance`): as canbench gives it by default.
    pub cycles: u128,
    /// Its controllers (`ic0.is_controller`); by default the anonymous principal, which
    /// installed it.
    pub controllers: Vec<Principal>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cycles: INITIAL_CYCLES,
            controllers: vec![Principal::anonymous()],
        }
    }
}

impl Default for EmbeddedEngine {
    fn default() -> Self {
        Self::new(Limits::APPLICATION)
    }
}

impl EmbeddedEngine {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            canisters: HashMap::new(),
            snapshots: Vec::new(),
            time_ns: GENESIS_TIME_NS,
            next_canister: 0,
            print_log: false,
            counter: Counter::default(),
            profiling: Profiling::Off,
            replica: Replica::NEWEST,
            host: Host::default(),
            counter_reads: CounterReads::Off,
            last_counter_reads: Vec::new(),
            sent: Vec::new(),
            answer: None,
            trapped: false,
            tree: Vec::new(),
            metering: Metering::Exact,
            expected_compiled_wasms: HashSet::new(),
            caller: None,
            replies: HashMap::new(),
            settings: Settings::default(),
        }
    }

    /// Who sends the update and query calls from now on (`ic0.msg_caller`); None: the
    /// anonymous principal, as a suite's calls.
    pub fn set_caller(&mut self, caller: Option<Principal>) {
        self.caller = caller.map(|p| p.as_slice().to_vec());
    }

    /// The cycles balance and controllers of the canisters made or loaded from now on.
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// What a call to `method` of `callee`, a canister that is not on the engine, is
    /// answered with from now on: `reply` (candid bytes), or with None the replica's reject
    /// for an absent canister (IC0301), as every such call is by default.
    pub fn set_reply(&mut self, callee: Principal, method: &str, reply: Option<Vec<u8>>) {
        let key = (callee, method.to_string());
        match reply {
            Some(bytes) => self.replies.insert(key, bytes),
            None => self.replies.remove(&key),
        };
    }

    /// The module of `wasm` as this engine runs it now: with the profiling probes exactly
    /// when profiling is on.
    fn module_of(&self, wasm: &[u8]) -> Result<Arc<LoadedModule>> {
        load_variant(
            &decompress(wasm)?,
            self.counter,
            self.profiling != Profiling::Off,
        )
    }

    /// The replica vintage whose rules the engine charges by (the newest by default).
    pub fn with_replica(mut self, replica: Replica) -> Self {
        self.replica = replica;
        self
    }

    /// The machine whose OS pages the charges count (`--host`; Linux's 4 KiB by default).
    pub fn with_host(mut self, host: Host) -> Self {
        self.host = host;
        self
    }

    /// The memory tracker's rule of the vintage on the host, if the vintage has it.
    fn page_rule(&self) -> Option<MemoryTracker> {
        self.replica.memory_tracker.map(|t| t.on(self.host))
    }

    /// Where modules installed from now on keep the instruction counter: the replica's
    /// own code ([`Counter::Global`]) or the faster default. Counts are the same.
    pub fn with_counter(mut self, counter: Counter) -> Self {
        self.counter = counter;
        self
    }

    /// Nothing ran yet: no canister was ever created and the clock was never advanced.
    fn is_fresh(&self) -> bool {
        self.canisters.is_empty()
            && self.snapshots.is_empty()
            && self.next_canister == 0
            && self.time_ns == GENESIS_TIME_NS
    }

    /// Echo canister `debug_print` output on stderr.
    pub fn print_canister_log(&mut self, on: bool) {
        self.print_log = on;
    }

    /// What `ic0.performance_counter` returns and keeps in the messages from now on (see
    /// [`CounterReads`]).
    pub fn set_counter_reads(&mut self, reads: CounterReads) {
        self.counter_reads = reads;
    }

    /// The `ic0.performance_counter` reads of the last message, in order (none with
    /// [`CounterReads::Off`]).
    pub fn counter_reads(&self) -> &[CounterRead] {
        &self.last_counter_reads
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The time (ns since the epoch) the last message saw; the next one sees one more.
    pub fn time_ns(&self) -> u64 {
        self.time_ns
    }

    /// Sets the clock, so that work spread over forks sees the time it would have seen
    /// on one engine (canbench's benches: one query each).
    pub fn set_time_ns(&mut self, time_ns: u64) {
        self.time_ns = time_ns;
    }

    fn canister(&mut self, id: Principal) -> Result<&mut Canister> {
        self.canisters
            .get_mut(&id)
            .ok_or_else(|| anyhow!("canister {id} does not exist"))
    }

    fn new_host_state(&self, id: Principal, stable: StableImage, version: u64) -> HostState {
        HostState {
            counter: None,
            left: 0,
            memory: None,
            heap: None,
            stable: StableMemory::new(stable, MAX_STABLE_BYTES),
            msg: Message::new(ApiType::Init, "", Vec::new(), 0),
            limits: self.limits,
            canister_id: id.as_slice().to_vec(),
            time_ns: self.time_ns,
            canister_version: version,
            cycles_balance: self.settings.cycles,
            controllers: (self.settings.controllers.iter())
                .map(|p| p.as_slice().to_vec())
                .collect(),
            certified_data: Vec::new(),
            global_timer: 0,
            log: Vec::new(),
            print_log: self.print_log,
            profiler: None,
            tracker: Tracker::new(self.page_rule()),
            native_stable: None,
            counter_reads: CounterReads::Off,
            reads: Vec::new(),
        }
    }

    /// A SHA-256 over the canister's whole state (heap, globals, stable memory), for
    /// checking determinism.
    pub fn state_hash(&mut self, id: Principal) -> Result<[u8; 32]> {
        let c = self.canister(id)?;
        if c.lost.is_some() {
            return Err(no_instance(id, &c.lost));
        }
        let mut h = Sha256::new();
        if let Some(heap) = c.live.as_ref().and_then(|i| i.heap.as_ref()) {
            // SAFETY: no Wasm runs while we read.
            h.update(unsafe { heap.bytes_mut()? });
        }
        if let Some(inst) = &mut c.live {
            for g in &inst.globals {
                // Numbers by value; references only by null-ness (their bits are addresses).
                let bytes: Vec<u8> = match g.get(&mut inst.store) {
                    Val::I32(v) => v.to_le_bytes().to_vec(),
                    Val::I64(v) => v.to_le_bytes().to_vec(),
                    Val::F32(v) => v.to_le_bytes().to_vec(),
                    Val::F64(v) => v.to_le_bytes().to_vec(),
                    Val::V128(v) => v.as_u128().to_le_bytes().to_vec(),
                    Val::FuncRef(r) => vec![r.is_some() as u8],
                    Val::ExternRef(r) => vec![r.is_some() as u8],
                    Val::AnyRef(r) => vec![r.is_some() as u8],
                    Val::ExnRef(r) => vec![r.is_some() as u8],
                    Val::ContRef(r) => vec![r.is_some() as u8],
                };
                h.update(bytes);
            }
            let image = inst.store.data().stable.image();
            h.update(image.size_wasm_pages().to_le_bytes());
            image.for_each_page(|n, bytes| {
                h.update(n.to_le_bytes());
                h.update(bytes);
            });
        }
        Ok(h.finalize().into())
    }

    /// The `debug_print` lines of the canister's last message.
    pub fn last_log(&self, id: Principal) -> Vec<String> {
        self.canisters
            .get(&id)
            .and_then(|c| c.live.as_ref())
            .map(|i| i.store.data().log.clone())
            .unwrap_or_default()
    }

    /// Replaces the canister's stable memory (canbench's `stable_memory.file`).
    pub fn set_stable_memory(&mut self, id: Principal, bytes: &[u8]) -> Result<()> {
        let c = self.canister(id)?;
        let inst = c
            .live
            .as_mut()
            .ok_or_else(|| anyhow!("canister {id} has no module installed"))?;
        inst.store.data_mut().stable =
            StableMemory::new(StableImage::from_bytes(bytes), MAX_STABLE_BYTES);
        Ok(())
    }
}

impl Engine for EmbeddedEngine {
    fn name(&self) -> &'static str {
        "embedded"
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn replica(&self) -> Option<Replica> {
        Some(self.replica)
    }

    fn host(&self) -> Option<Host> {
        Some(self.host)
    }

    fn fresh_with(&self, limits: Limits) -> Option<Box<dyn Engine + Send>> {
        let engine = EmbeddedEngine::new(limits)
            .with_replica(self.replica)
            .with_host(self.host);
        Some(Box::new(engine))
    }

    fn set_replica(&mut self, replica: Replica) -> Result<()> {
        // Every message reads the vintage when it starts (`execute`), and a fork copies it.
        self.replica = replica;
        Ok(())
    }

    fn checkpoint(&mut self) {
        self.expected_compiled_wasms.clear();
    }

    fn state_key(&self, wasm: &[u8]) -> Result<Option<[u8; 32]>> {
        self.exported_state_key(wasm)
    }

    fn export_state(&mut self, id: Principal) -> Result<ExportedState> {
        self.export(id)
    }

    fn write_state(&mut self, id: Principal, w: &mut dyn std::io::Write) -> Result<()> {
        self.write_live(id, w)
    }

    fn import_state(&mut self, wasm: &[u8], state: StateBytes<'_>) -> Result<Principal> {
        self.import(wasm, state)
    }

    fn export_state_delta(&mut self, state: SnapshotId, base: SnapshotId) -> Result<ExportedState> {
        self.export_delta(state, base)
    }

    fn import_state_delta(
        &mut self,
        base: SnapshotId,
        delta: StateBytes<'_>,
    ) -> Result<SnapshotId> {
        self.import_delta(base, delta)
    }

    fn install(&mut self, wasm: &[u8], arg: &[u8]) -> Result<(Principal, CallOutcome)> {
        let new = self.new_module(wasm)?;
        self.install_new(new, arg)
    }

    fn install_code(&mut self, id: Principal, code: InstallCode<'_>) -> Result<CallOutcome> {
        let new = self.new_module(code.wasm)?;
        match code.mode {
            InstallMode::Reinstall => self.reinstall_canister(id, new, code.arg),
            InstallMode::Upgrade(options) => self.upgrade_canister(id, new, code.arg, options),
        }
    }

    fn update(&mut self, id: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        self.update_tree(id, method, arg)
    }

    fn query(&mut self, id: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        self.call(id, ApiType::Query, method, arg)
    }

    fn advance_time(&mut self, by: std::time::Duration) -> Result<()> {
        self.advance(by)
    }

    fn tick(&mut self) -> Result<Vec<super::TaskOutcome>> {
        self.round()
    }

    fn snapshot(&mut self, id: Principal) -> Result<SnapshotId> {
        self.take_snapshot(id)
    }

    fn restore(&mut self, id: Principal, snapshot: SnapshotId) -> Result<()> {
        self.restore_snapshot(id, snapshot)
    }

    fn set_metering(&mut self, metering: Metering) {
        self.metering = metering;
    }

    fn set_profiling(&mut self, profiling: Profiling) -> Result<()> {
        // Canisters switch to the other variant of their module when they are next loaded
        // (every scenario restores a snapshot) or installed.
        self.profiling = profiling;
        Ok(())
    }

    fn fork(
        &mut self,
        id: Principal,
        snapshot: SnapshotId,
    ) -> Result<Option<Box<dyn Engine + Send>>> {
        Ok(Some(Box::new(self.fork_at(id, snapshot)?)))
    }

    fn prepare(&mut self, wasm: &[u8]) -> Result<()> {
        self.module_of(wasm).map(|_| ())
    }

    fn fork_process(&mut self) -> Result<Option<super::ProcessSide>> {
        process::fork().map(Some)
    }

    fn share(&mut self, snapshot: SnapshotId) -> Result<Option<SharedSnapshot>> {
        self.share_snapshot(snapshot)
    }

    fn adopt(&mut self, shared: &SharedSnapshot) -> Result<SnapshotId> {
        self.adopt_snapshot(shared)
    }

    fn forget(&mut self, snapshot: SnapshotId) -> Result<()> {
        self.forget_snapshot(snapshot)
    }
}

/// The hash the replica keys `expected_compiled_wasms` by: SHA-256 of the module as
/// install_code received it (`WasmHash` of the `CanisterModule`, gzipped or not).
fn module_hash(wasm: &[u8]) -> [u8; 32] {
    Sha256::digest(wasm).into()
}

/// Canister ids as PocketIC assigns them on its application subnet: the first one is
/// `lxzze-o7777-77777-aaaaa-cai`, then consecutive ids of the same range.
pub fn canister_id(n: u64) -> Principal {
    let first = Principal::from_text(FIRST_CANISTER_ID).expect("valid principal");
    let mut bytes = first.as_slice().to_vec();
    // Canister ids are an 8-byte big-endian index followed by 0x01 0x01.
    let mut index = [0u8; 8];
    index.copy_from_slice(&bytes[..8]);
    let next = u64::from_be_bytes(index).wrapping_add(n);
    bytes[..8].copy_from_slice(&next.to_be_bytes());
    Principal::from_slice(&bytes)
}
