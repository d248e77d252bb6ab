//! The embedded IC engine: canister Wasm, instrumented exactly as the replica instruments
//! it, executed by wasmtime with the replica's System API, message semantics and limits.
//! No external binary is needed, and the same calls give the same counts and state.
//!
//! This file holds the engine's state and a canister's lifecycle (install, upgrade,
//! reinstall, snapshots, forks, exported states) and implements [`Engine`]. Its parts:
//! [`module`] loads a module, [`execute`] runs one message, [`memory`] is the memory
//! tracker, [`system_api`] the System API, [`profiler`] the instruction profiles.

mod execute;
pub mod memory;
mod module;
mod profiler;
pub mod system_api;

pub use module::{
    check_module, load_module, load_module_cached, perf_map_if_asked, LoadedModule, ModuleFacts,
    Origin,
};
use module::{decompress, load_variant, module_key, variant, wasmtime_engine};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use candid::Principal;
use sha2::{Digest, Sha256};
use wasmtime::unix::StoreExt;
use wasmtime::{Extern, Global, Memory, Mutability, Store, Val};

use self::memory::charges::Tracker;
use self::memory::heap::{self, HeapRegion};
use self::memory::image::{FrozenHeap, HeapImage, PageSet};
use self::memory::stable::{StableImage, StableMemory, WASM_PAGE};
use self::memory::OS_PAGE;
use self::system_api::{ApiType, HostState, HostTrap, Message, MAX_STABLE_BYTES};
use super::cost::{self, Limits, Replica};
use super::counter_reads::{CounterRead, CounterReads};
use super::disk_cache;
use super::instrument::{self, Counter};
use super::page_map::{MemoryPages, PageMap};
use super::profile::{self, Profile};
use super::{
    CallOutcome, Engine, ErrorCode, ExportedState, InstallStage, MessageReport, PageCounts,
    Profiling, Reject, SharedSnapshot, SnapshotId, UpgradeOptions, WasmMemoryPersistence,
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

/// A live instance: the wasmtime store, its heap and the handles we need every message.
struct Instance {
    store: Store<HostState>,
    instance: wasmtime::Instance,
    heap: Option<Arc<HeapRegion>>,
    counter: Global,
    /// Set to 1 by a failed instruction check right before it traps with `unreachable`.
    out_of_instructions: Global,
    /// Mutable globals the module exports (the instrumentation exports all of them), saved
    /// and restored around messages because a trap must roll them back.
    globals: Vec<Global>,
}

fn instantiate(module: &LoadedModule, state: HostState) -> Result<Instance> {
    let mut store = Store::new(wasmtime_engine(), state);
    heap::take_created();
    let instance = module
        .pre
        .instantiate(&mut store)
        .map_err(|e| anyhow!("instantiating the module failed: {e:#}"))?;
    let heap = heap::take_created().into_iter().next();
    // After instantiation: the initial memory is the module's, not a grow.
    store.limiter(|state| state);
    let counter = instance
        .get_global(&mut store, instrument::INSTRUCTION_COUNTER_EXPORT)
        .ok_or_else(|| anyhow!("the instrumented module has no instruction counter"))?;
    let out_of_instructions = instance
        .get_global(&mut store, instrument::OUT_OF_INSTRUCTIONS_FLAG_EXPORT)
        .ok_or_else(|| anyhow!("the instrumented module has no out-of-instructions flag"))?;
    let mut globals = Vec::new();
    let exports: Vec<_> = instance
        .exports(&mut store)
        .map(|e| (e.name().to_string(), e.into_extern()))
        .collect();
    let mut memory: Option<Memory> = None;
    for (name, ext) in exports {
        match ext {
            // The native stable accesses' memories and global are the host's business only.
            _ if module.native_stable && name.starts_with(instrument::ICBENCH_EXPORT_PREFIX) => {}
            Extern::Global(g)
                if name != instrument::INSTRUCTION_COUNTER_EXPORT
                    && name != instrument::OUT_OF_INSTRUCTIONS_FLAG_EXPORT
                    && g.ty(&store).mutability() == Mutability::Var =>
            {
                globals.push(g)
            }
            Extern::Memory(m) if memory.is_none() => memory = Some(m),
            _ => {}
        }
    }
    if let Some(region) = &heap {
        let region = region.clone();
        // SAFETY: the handler only does atomics and mprotect (async-signal-safe).
        unsafe {
            store.set_signal_handler(move |_signum, info, _ctx| {
                // The kernel hands the handler a valid siginfo for SIGSEGV/SIGBUS.
                let addr = (*info).si_addr() as usize;
                region.handle_fault(addr)
            });
        }
    }
    if module.native_stable {
        let native = system_api::NativeStable::new(&mut store, &instance)
            .ok_or_else(|| anyhow!("the instrumented module lacks its native stable exports"))?;
        store.data_mut().native_stable = Some(native);
    }
    store.data_mut().counter = Some(counter);
    store.data_mut().memory = memory;
    store.data_mut().heap = heap.clone();
    Ok(Instance {
        store,
        instance,
        heap,
        counter,
        out_of_instructions,
        globals,
    })
}

/// Host stack for running Wasm: the replica's 5 MiB Wasm stack plus room for host calls.
/// Wasm runs on the calling thread's stack, and a caller with less (test threads have
/// 2 MiB) would overflow the real stack before wasmtime's limit turns deep recursion into
/// a clean "stack overflow" trap.
pub const HOST_STACK: usize = 16 << 20;

thread_local! {
    /// The thread was spawned with [`HOST_STACK`] of stack (by [`spawn_scoped`]): Wasm runs on
    /// it directly instead of on a thread spawned per message, whose CPU time the calling
    /// thread's clock would not see (and whose stack mapping costs every message).
    static LARGE_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Spawns a scoped thread with [`HOST_STACK`] of stack on which the engine runs Wasm
/// directly: for the threads that run canisters (the CLI's own, the suites' workers).
pub fn spawn_scoped<'scope, 'env, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, T>> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(HOST_STACK)
        .spawn_scoped(scope, move || {
            LARGE_STACK.with(|l| l.set(true));
            f()
        })
}

fn on_large_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if LARGE_STACK.with(|l| l.get()) {
        return f();
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("icbench-wasm".into())
            .stack_size(HOST_STACK)
            .spawn_scoped(scope, f)
            .expect("spawning the Wasm execution thread");
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

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
    /// What `ic0.performance_counter` returns and keeps in the next messages, and the
    /// reads of the last message.
    counter_reads: CounterReads,
    last_counter_reads: Vec<CounterRead>,
    /// The subnet's `expected_compiled_wasms`: the hash of every module a successful
    /// install_code installed since the last [`Engine::checkpoint`]. Subnet state, not a
    /// canister's: restoring a snapshot leaves it alone.
    expected_compiled_wasms: HashSet<[u8; 32]>,
}

impl Default for EmbeddedEngine {
    fn default() -> Self {
        Self::new(Limits::APPLICATION)
    }
}

fn heap_bytes(inst: &Instance) -> u64 {
    inst.heap.as_ref().map(|h| h.len() as u64).unwrap_or(0)
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
            counter_reads: CounterReads::Off,
            last_counter_reads: Vec::new(),
            expected_compiled_wasms: HashSet::new(),
        }
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
            cycles_balance: INITIAL_CYCLES,
            certified_data: Vec::new(),
            global_timer: 0,
            log: Vec::new(),
            print_log: self.print_log,
            profiler: None,
            tracker: Tracker::new(self.replica.memory_tracker),
            native_stable: None,
            counter_reads: CounterReads::Off,
            reads: Vec::new(),
        }
    }

    /// A SHA-256 over the canister's whole state (heap, globals, stable memory), for
    /// checking determinism.
    pub fn state_hash(&mut self, id: Principal) -> Result<[u8; 32]> {
        let c = self.canister(id)?;
        let mut h = Sha256::new();
        if let Some(heap) = c.live.as_ref().and_then(|i| i.heap.as_ref()) {
            // SAFETY: no Wasm runs while we read.
            h.update(unsafe { heap.bytes_mut() });
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

    /// [`Self::load`] after a message: a fresh state for the instance, but the message's log
    /// stays the last one.
    fn load_keeping_log(&mut self, id: Principal, saved: &SavedState) -> Result<()> {
        let log = self.last_log(id);
        self.load(id, saved)?;
        if let Some(inst) = &mut self.canister(id)?.live {
            inst.store.data_mut().log = log;
        }
        Ok(())
    }

    /// Fresh instance of `module` over the `carried` memories, then `canister_start` and
    /// `init_export`: the rest of an install_code that already used `used_before`
    /// instructions (pre_upgrade). Compilation and every stage share one limit
    /// (`max_instructions_per_install_code`: each stage gets what is left, upgrade.rs and
    /// install_code.rs `reduce_instructions_by`), and at the end the heap must be within
    /// `wasm_memory_limit` (install_code.rs `finish`), or the whole call fails.
    #[allow(clippy::too_many_arguments)]
    fn start_module(
        &mut self,
        id: Principal,
        module: Arc<LoadedModule>,
        module_hash: &[u8; 32],
        carried: Carried,
        api: ApiType,
        init_export: &str,
        arg: &[u8],
        used_before: u64,
    ) -> Result<CallOutcome> {
        let limit = self.limits.max_instructions_per_install;
        let over_limit = |id: Principal| {
            reject(
                ErrorCode::CanisterInstructionLimitExceeded,
                format!("Error from Canister {id}: Canister exceeded the limit of {limit} instructions for single message execution."),
            )
        };
        let version = self.canister(id)?.version;
        let state = self.new_host_state(id, carried.stable, version);
        let mut inst = instantiate(&module, state)?;
        let heap_written = match (carried.heap, &inst.heap) {
            (Some(kept), _) => {
                let zero_from = grow_heap(&mut inst, kept.len())?;
                if let Some(h) = &inst.heap {
                    // SAFETY: no Wasm is running.
                    kept.restore_into(unsafe { h.bytes_mut() }, zero_from)?;
                }
                kept.written().clone()
            }
            // The data segments: SAFETY: no Wasm is running.
            (None, Some(h)) => PageSet::nonzero_pages(unsafe { h.bytes_mut() }),
            (None, None) => PageSet::default(),
        };
        let c = self.canister(id)?;
        c.since_load = None;
        c.heap_written = heap_written;
        c.module = Some(module.clone());
        c.live = Some(inst);
        let mut total = CallOutcome {
            result: Ok(Vec::new()),
            report: MessageReport::default(),
        };
        // Creating the execution state: its base cost and the compilation, reduced for a
        // module the subnet installed since its last checkpoint (as the vintage has it).
        let compilation = self.replica.compilation_charge(
            module.compile_instructions,
            self.expected_compiled_wasms.contains(module_hash),
        );
        total.report.instructions = compilation;
        if self.profiling == Profiling::Messages {
            let mut profile = Profile::new();
            let base = self.replica.create_execution_state_base_cost;
            profile.add(&[profile::EXECUTION_STATE], base);
            profile.add(&[profile::COMPILATION], compilation - base);
            total.report.profile = Some(profile);
        }
        total.report.stages.push((
            InstallStage::Compilation,
            MessageReport {
                instructions: compilation,
                ..MessageReport::default()
            },
        ));
        let mut used = used_before + compilation;
        if used > limit {
            total.result = Err(over_limit(id));
            return Ok(total);
        }
        for (kind, export) in [
            (ApiType::Start, instrument::CANISTER_START_EXPORT),
            (api, init_export),
        ] {
            if !module.exports.contains(export) {
                continue;
            }
            let out = self.execute_within(
                id,
                kind,
                export,
                "",
                if kind == ApiType::Start {
                    Vec::new()
                } else {
                    arg.to_vec()
                },
                Some(limit - used),
            )?;
            let stage = match kind {
                ApiType::Start => InstallStage::Start,
                ApiType::PostUpgrade => InstallStage::PostUpgrade,
                _ => InstallStage::Init,
            };
            add_stage(&mut total.report, stage, &out.report);
            if out.result.is_err() {
                total.result = out.result;
                return Ok(total);
            }
            // The heap dirty-page charge comes after the run and may take the stage past
            // what was left.
            used += out.report.instructions;
            if used > limit {
                total.result = Err(over_limit(id));
                return Ok(total);
            }
        }
        let wasm_memory_limit = self.limits.wasm_memory_limit;
        let heap = total.report.heap_bytes_after;
        if wasm_memory_limit != 0 && heap > wasm_memory_limit {
            let trap = HostTrap::WasmMemoryLimit {
                peak_bytes: heap,
                limit: wasm_memory_limit,
            };
            total.result = Err(reject(
                ErrorCode::CanisterWasmMemoryLimitExceeded,
                format!("Error from Canister {id}: {trap}."),
            ));
        }
        Ok(total)
    }

    fn save(&mut self, id: Principal) -> Result<SavedState> {
        let c = self.canister(id)?;
        let module = c
            .module
            .clone()
            .ok_or_else(|| anyhow!("canister {id} has no module installed"))?;
        let inst = c
            .live
            .as_mut()
            .ok_or_else(|| anyhow!("canister {id} has no module installed"))?;
        let globals = inst
            .globals
            .iter()
            .map(|g| g.get(&mut inst.store))
            .collect();
        let len = heap_bytes(inst) as usize;
        let heap = match (shared_or_layered(&c.since_load, inst, len)?, &inst.heap) {
            (Some(heap), _) => heap,
            (None, Some(h)) if !module.fresh_instance_per_message => {
                // SAFETY: between messages the live heap is the committed one, not armed.
                let (frozen, view) =
                    unsafe { FrozenHeap::moved_from(h.bytes_mut(), &c.heap_written)? };
                let frozen = Arc::new(frozen);
                if view != 0 {
                    // As after a restore: the live heap is a view of the state saved.
                    h.set_view_of(view, std::iter::empty());
                    c.since_load = Some(SinceLoad {
                        heap: frozen.clone(),
                        pages: HashSet::new(),
                    });
                }
                frozen
            }
            (None, _) => Arc::new(FrozenHeap::of(committed(inst, len), &c.heap_written)?),
        };
        let data = inst.store.data();
        Ok(SavedState {
            module,
            heap,
            globals,
            stable: data.stable.image().clone(),
            certified_data: data.certified_data.clone(),
            global_timer: data.global_timer,
        })
    }

    fn load(&mut self, id: Principal, saved: &SavedState) -> Result<()> {
        let version = self.canister(id)?.version;
        let state = self.new_host_state(id, saved.stable.clone(), version);
        let module = variant(&saved.module, self.profiling)?;
        let Some(state) = self.reload_in_place(id, saved, &module, state)? else {
            return Ok(());
        };
        let inst = restore_instance(saved, &module, state)?;
        let c = self.canister(id)?;
        c.heap_written = saved.heap.written_pages().collect();
        c.module = Some(module);
        c.live = Some(inst);
        c.since_load = Some(SinceLoad {
            heap: saved.heap.clone(),
            pages: HashSet::new(),
        });
        Ok(())
    }

    /// Loads `saved` into the live instance when that instance was loaded from the same
    /// state and its heap has not grown since: only the pages committed since are copied
    /// back. A fresh instance (the other path) maps and copies the whole heap, which for a
    /// 1M-row canister was an eighth of a benchmark run. Hands `state` back if this does
    /// not apply.
    fn reload_in_place(
        &mut self,
        id: Principal,
        saved: &SavedState,
        module: &Arc<LoadedModule>,
        state: HostState,
    ) -> Result<Option<HostState>> {
        let c = self.canister(id)?;
        // The live instance must run the variant (profiled or not) wanted now.
        let same_module = c.module.as_ref().is_some_and(|m| Arc::ptr_eq(m, module));
        let (Some(since), Some(inst)) = (&mut c.since_load, &mut c.live) else {
            return Ok(Some(state));
        };
        let same_state = same_module
            && Arc::ptr_eq(&since.heap, &saved.heap)
            && !saved.module.fresh_instance_per_message
            && heap_bytes(inst) == saved.heap.len() as u64;
        if !same_state {
            return Ok(Some(state));
        }
        let mut pages: Vec<u32> = since.pages.drain().collect();
        pages.sort_unstable();
        if let Some(h) = &inst.heap {
            // SAFETY: no Wasm is running; the heap has the saved length (checked above),
            // and its view id is the one `map_into` gave when it was loaded.
            if unsafe { saved.heap.revert_live(h.bytes_mut(), h.view_of(), &pages)? } {
                h.mark_clean(
                    pages
                        .iter()
                        .copied()
                        .filter(|&p| !saved.heap.is_own_page(p)),
                );
            }
        }
        for (g, v) in inst.globals.iter().zip(&saved.globals) {
            g.set(&mut inst.store, *v)?;
        }
        // The instance's handles stay; everything else is the state as loaded.
        let old = std::mem::replace(inst.store.data_mut(), state);
        let data = inst.store.data_mut();
        data.counter = old.counter;
        data.memory = old.memory;
        data.heap = old.heap;
        // Its marks too: the next message clears them.
        data.native_stable = old.native_stable;
        data.certified_data = saved.certified_data.clone();
        data.global_timer = saved.global_timer;
        Ok(None)
    }

    fn method_export(
        &mut self,
        id: Principal,
        method: &str,
        api: ApiType,
    ) -> Result<Result<String, Reject>> {
        let c = self.canister(id)?;
        let Some(module) = &c.module else {
            return Ok(Err(reject(ErrorCode::CanisterWasmModuleNotFound, format!("Error from Canister {id}: Attempted to execute a message, but the canister contains no Wasm module."))));
        };
        if api == ApiType::Query {
            if module.query_methods.contains(method) {
                return Ok(Ok(query_export(module, method)));
            }
            return Ok(Err(reject(
                ErrorCode::CanisterMethodNotFound,
                format!("Error from Canister {id}: Canister has no query method '{method}'."),
            )));
        }
        if module.update_methods.contains(method) {
            return Ok(Ok(format!("canister_update {method}")));
        }
        if module.query_methods.contains(method) {
            return Ok(Ok(query_export(module, method)));
        }
        Ok(Err(reject(
            ErrorCode::CanisterMethodNotFound,
            format!("Error from Canister {id}: Canister has no update method '{method}'."),
        )))
    }
}

fn query_export(module: &LoadedModule, method: &str) -> String {
    let plain = format!("canister_query {method}");
    if module.exports.contains(&plain) {
        plain
    } else {
        format!("canister_composite_query {method}")
    }
}

/// Grows the instance's heap to `want` bytes if it is smaller; returns the heap's length
/// before, from which on it is zero.
fn grow_heap(inst: &mut Instance, want: usize) -> Result<usize> {
    let Some(h) = &inst.heap else {
        if want > 0 {
            bail!("cannot put a {want}-byte heap into a module without memory");
        }
        return Ok(0);
    };
    let have = h.len();
    if want > have {
        let memory = inst
            .store
            .data()
            .memory
            .ok_or_else(|| anyhow!("module has a heap but exports no memory"))?;
        memory.grow(&mut inst.store, ((want - have) / 65536) as u64)?;
    }
    Ok(have)
}

/// A canister's committed heap (the live heap's first `len` bytes, whose pages other than
/// `written` are zero), frozen. Since the last load, with nothing committed: the
/// loaded state's frozen heap itself, shared (a snapshot or an upgrade right after a
/// restore of a 10,000,000-row heap map would otherwise copy gigabytes); with a few pages
/// committed and the heap not grown: that frozen heap plus copies of those pages; else a
/// copy of the whole heap. Every form has the same bytes.
fn frozen_committed(
    since_load: &Option<SinceLoad>,
    inst: &Instance,
    len: usize,
    written: &PageSet,
) -> Result<Arc<FrozenHeap>> {
    if let Some(heap) = shared_or_layered(since_load, inst, len)? {
        return Ok(heap);
    }
    Ok(Arc::new(FrozenHeap::of(committed(inst, len), written)?))
}

/// The live heap's first `len` bytes: between messages (or rolled back, up to `len`: a
/// failed message that grew the heap) the committed heap.
fn committed(inst: &Instance, len: usize) -> &[u8] {
    match &inst.heap {
        // SAFETY: no Wasm runs while the caller reads (between messages).
        Some(h) => unsafe { &h.bytes_mut()[..len] },
        None => &[],
    }
}

/// [`frozen_committed`]'s forms that share the loaded state's frozen heap, when one
/// applies; `None`: the heap needs a whole copy.
fn shared_or_layered(
    since_load: &Option<SinceLoad>,
    inst: &Instance,
    len: usize,
) -> Result<Option<Arc<FrozenHeap>>> {
    let Some(since) = since_load else {
        return Ok(None);
    };
    let pages = since.heap.len() / OS_PAGE;
    if since.heap.len() != len || pages == 0 {
        return Ok(None);
    }
    if since.pages.is_empty() {
        return Ok(Some(since.heap.clone()));
    }
    // A layer pays off while it holds a small part of the heap.
    if (since.pages.len() + since.heap.layer_pages()) * 4 < pages {
        let mut changed: Vec<u32> = since.pages.iter().copied().collect();
        changed.sort_unstable();
        return Ok(Some(Arc::new(FrozenHeap::layered(
            &since.heap,
            committed(inst, len),
            changed.into_iter(),
        )?)));
    }
    Ok(None)
}

fn restore_instance(
    saved: &SavedState,
    module: &LoadedModule,
    state: HostState,
) -> Result<Instance> {
    let mut inst = instantiate(module, state)?;
    let zero_from = grow_heap(&mut inst, saved.heap.len())?;
    if let Some(h) = &inst.heap {
        // SAFETY: the slice is the instance's own heap mapping, not armed; no Wasm runs.
        let view = unsafe { saved.heap.map_into(h.bytes_mut(), zero_from)? };
        h.set_view_of(view, saved.heap.own_pages());
    }
    for (g, v) in inst.globals.clone().iter().zip(&saved.globals) {
        g.set(&mut inst.store, *v)?;
    }
    let state = inst.store.data_mut();
    state.certified_data = saved.certified_data.clone();
    state.global_timer = saved.global_timer;
    Ok(inst)
}

/// Adds the report of one stage of `install_code` to the whole call's: its counts, the
/// stage itself, and its profile under the stage's frame.
fn add_stage(total: &mut MessageReport, stage: InstallStage, part: &MessageReport) {
    add_report(total, part);
    if let Some(profile) = &part.profile {
        total
            .profile
            .get_or_insert_with(Profile::new)
            .add_profile(&[stage.frame()], profile);
    }
    total.stages.push((
        stage,
        MessageReport {
            profile: None,
            ..part.clone()
        },
    ));
}

fn add_report(total: &mut MessageReport, part: &MessageReport) {
    if total.heap_bytes_before == 0 && total.stable_bytes_before == 0 {
        total.heap_bytes_before = part.heap_bytes_before;
        total.stable_bytes_before = part.stable_bytes_before;
    }
    total.instructions += part.instructions;
    total.heap_dirty_pages += part.heap_dirty_pages;
    total.stable_dirty_pages += part.stable_dirty_pages;
    total.pages = PageCounts::sum(total.pages, part.pages.as_ref());
    if part.page_map.is_some() {
        total.page_map = part.page_map.clone();
    }
    total.heap_bytes_after = part.heap_bytes_after;
    total.stable_bytes_after = part.stable_bytes_after;
    total.stages.extend_from_slice(&part.stages);
}

fn reject(error_code: ErrorCode, message: String) -> Reject {
    Reject {
        code: error_code.reject_code(),
        error_code,
        message,
    }
}

/// Maps a failed execution to the replica's error code and wording.
fn trap_to_reject(id: Principal, e: &wasmtime::Error, limit: u64) -> Reject {
    if let Some(t) = e.downcast_ref::<HostTrap>() {
        let code = match t {
            HostTrap::CalledTrap(_) => ErrorCode::CanisterCalledTrap,
            HostTrap::OutOfInstructions => {
                return reject(
                    ErrorCode::CanisterInstructionLimitExceeded,
                    format!("Error from Canister {id}: Canister exceeded the limit of {limit} instructions for single message execution."),
                )
            }
            HostTrap::ContractViolation(_) | HostTrap::Unsupported(_) => ErrorCode::CanisterContractViolation,
            HostTrap::MemoryAccessLimit(_) => ErrorCode::CanisterMemoryAccessLimitExceeded,
            HostTrap::WasmMemoryLimit { .. } => ErrorCode::CanisterWasmMemoryLimitExceeded,
        };
        return reject(code, format!("Error from Canister {id}: {t}."));
    }
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        use wasmtime::Trap as T;
        let what = match trap {
            T::StackOverflow => "stack overflow".to_string(),
            T::MemoryOutOfBounds => "heap out of bounds".to_string(),
            T::TableOutOfBounds => "table out of bounds".to_string(),
            T::IndirectCallToNull => "indirect call to null".to_string(),
            T::BadSignature => "indirect call signature mismatch".to_string(),
            T::IntegerOverflow => "integer overflow".to_string(),
            T::IntegerDivisionByZero => "integer division by 0".to_string(),
            T::BadConversionToInteger => "invalid conversion to integer".to_string(),
            T::UnreachableCodeReached => "unreachable".to_string(),
            other => other.to_string(),
        };
        return reject(
            ErrorCode::CanisterTrapped,
            format!("Error from Canister {id}: Canister trapped: {what}."),
        );
    }
    reject(
        ErrorCode::CanisterTrapped,
        format!("Error from Canister {id}: Canister trapped: {e:#}."),
    )
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

    fn set_replica(&mut self, replica: Replica) -> Result<()> {
        // Every message reads the vintage when it starts (`execute`), and a fork copies it.
        self.replica = replica;
        Ok(())
    }

    fn checkpoint(&mut self) {
        self.expected_compiled_wasms.clear();
    }

    fn state_key(&self, wasm: &[u8]) -> Result<Option<[u8; 32]>> {
        if disk_cache::dir().is_none() || !self.is_fresh() {
            return Ok(None);
        }
        let raw = decompress(wasm)?;
        let hash: [u8; 32] = Sha256::digest(&raw).into();
        let mut h = Sha256::new();
        h.update(STATE_FORMAT);
        // The module entry's key covers the module, the counter, wasmtime and the engine's
        // sources; the limits decide what a message may do.
        h.update(module_key(&hash, self.counter, false));
        h.update(format!("{:?}", self.limits).as_bytes());
        h.update(self.replica.name.as_bytes());
        Ok(Some(h.finalize().into()))
    }

    fn export_state(&mut self, id: Principal) -> Result<ExportedState> {
        if self.canisters.len() != 1 || id != canister_id(0) {
            bail!("only the first and only canister of an engine can be exported");
        }
        let version = self.canister(id)?.version;
        let saved = self.save(id)?;
        let put = |w: &mut Vec<u8>, n: u64| w.extend_from_slice(&n.to_le_bytes());
        // Everything that can fail, and everything the engine must give, is taken here;
        // the pages are shared with the engine (frozen) and written out later.
        let mut head = Vec::new();
        head.extend_from_slice(STATE_FORMAT);
        head.extend_from_slice(&saved.module.wasm_hash);
        put(&mut head, self.time_ns);
        put(&mut head, self.next_canister);
        put(&mut head, version);
        let mut globals = Vec::new();
        put(&mut globals, saved.globals.len() as u64);
        for g in &saved.globals {
            let (tag, bits): (u64, u128) = match g {
                Val::I32(v) => (0, *v as u32 as u128),
                Val::I64(v) => (1, *v as u64 as u128),
                Val::F32(v) => (2, *v as u128),
                Val::F64(v) => (3, *v as u128),
                Val::V128(v) => (4, v.as_u128()),
                other => bail!("a mutable global holds a reference ({other:?}): not exportable"),
            };
            put(&mut globals, tag);
            globals.extend_from_slice(&bits.to_le_bytes());
        }
        let mut tail = Vec::new();
        put(&mut tail, saved.certified_data.len() as u64);
        tail.extend_from_slice(&saved.certified_data);
        put(&mut tail, saved.global_timer);
        let (heap, stable) = (saved.heap, saved.stable);
        Ok(ExportedState::new(move |w| {
            let put = |w: &mut dyn std::io::Write, n: u64| w.write_all(&n.to_le_bytes());
            w.write_all(&head)?;
            put(w, heap.len() as u64)?;
            let pages: Vec<u32> = heap.written_pages().collect();
            put(w, pages.len() as u64)?;
            for p in pages {
                put(w, p as u64)?;
                w.write_all(heap.page(p))?;
            }
            w.write_all(&globals)?;
            put(w, stable.size_wasm_pages())?;
            put(w, stable.stored_pages() as u64)?;
            let mut written = Ok(());
            stable.for_each_page(|n, bytes| {
                if written.is_ok() {
                    written = put(w, n).and_then(|()| w.write_all(bytes));
                }
            });
            written?;
            w.write_all(&tail)
        }))
    }

    fn import_state(&mut self, wasm: &[u8], state: &[u8]) -> Result<Principal> {
        if !self.is_fresh() {
            bail!("a state can only be imported into a fresh engine");
        }
        let module = self.module_of(wasm)?;
        let mut r = StateReader(state);
        if r.bytes(STATE_FORMAT.len())? != STATE_FORMAT {
            bail!("not a canister state of this format");
        }
        if r.bytes(32)? != module.wasm_hash {
            bail!("the state was made with another module");
        }
        let (time_ns, next_canister, version) = (r.u64()?, r.u64()?, r.u64()?);
        if next_canister != 1 {
            bail!("the state holds {next_canister} canisters, not 1");
        }
        // The pages are only located here; the heap's and stable memory's copies are made
        // side by side below (a default run's state is 420 MB).
        let heap_len = usize::try_from(r.u64()?)?;
        let heap_pages = (heap_len / OS_PAGE) as u64;
        let mut heap = Vec::new();
        for _ in 0..r.u64()? {
            let p = r.u64()?;
            if p >= heap_pages {
                bail!("heap page {p} is past the heap's {heap_pages} pages");
            }
            if heap.last().is_some_and(|&(last, _)| last >= p as u32) {
                bail!("heap page {p} is out of order");
            }
            heap.push((p as u32, r.bytes(OS_PAGE)?));
        }
        let mut globals = Vec::new();
        for _ in 0..r.u64()? {
            let tag = r.u64()?;
            let bits = u128::from_le_bytes(r.bytes(16)?.try_into().unwrap());
            globals.push(match tag {
                0 => Val::I32(bits as u32 as i32),
                1 => Val::I64(bits as u64 as i64),
                2 => Val::F32(bits as u32),
                3 => Val::F64(bits as u64),
                4 => Val::V128(bits.into()),
                _ => bail!("unknown global type tag {tag}"),
            });
        }
        let stable_size = r.u64()?;
        let mut stable_pages = Vec::new();
        for _ in 0..r.u64()? {
            let n = r.u64()?;
            stable_pages.push((n, r.bytes(OS_PAGE)?));
        }
        let (heap, stable) = std::thread::scope(|scope| {
            let stable = scope.spawn(|| StableImage::from_pages(stable_size, &stable_pages));
            let heap = FrozenHeap::from_pages(heap_len, heap.into_iter());
            let stable = stable
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (heap, stable)
        });
        let (heap, stable) = (heap?, stable?);
        let certified_len = usize::try_from(r.u64()?)?;
        let certified_data = r.bytes(certified_len)?.to_vec();
        let global_timer = r.u64()?;
        if !r.0.is_empty() {
            bail!("{} bytes after the state", r.0.len());
        }
        let saved = SavedState {
            module: module.clone(),
            heap: Arc::new(heap),
            globals,
            stable,
            certified_data,
            global_timer,
        };
        let id = canister_id(0);
        self.canisters.insert(
            id,
            Canister {
                module: Some(module),
                live: None,
                heap_written: PageSet::default(),
                version,
                since_load: None,
            },
        );
        let loaded = self.load(id, &saved).and_then(|()| {
            let c = self.canister(id)?;
            let have = c.live.as_ref().map_or(0, |i| i.globals.len());
            if have != saved.globals.len() {
                bail!(
                    "the state has {} mutable globals, the module {have}",
                    saved.globals.len()
                );
            }
            Ok(())
        });
        if let Err(e) = loaded {
            self.canisters.clear();
            return Err(e);
        }
        self.time_ns = time_ns;
        self.next_canister = next_canister;
        // The exporting engine installed this module, successfully, and nothing else.
        self.expected_compiled_wasms.insert(module_hash(wasm));
        Ok(id)
    }

    fn install(&mut self, wasm: &[u8], arg: &[u8]) -> Result<(Principal, CallOutcome)> {
        let module = self.module_of(wasm)?;
        let hash = module_hash(wasm);
        let id = canister_id(self.next_canister);
        self.next_canister += 1;
        self.canisters.insert(
            id,
            Canister {
                module: None,
                live: None,
                heap_written: PageSet::default(),
                version: 0,
                since_load: None,
            },
        );
        let out = self.start_module(
            id,
            module,
            &hash,
            Carried {
                stable: StableImage::default(),
                heap: None,
            },
            ApiType::Init,
            "canister_init",
            arg,
            0,
        )?;
        self.installed(&hash, &out);
        if out.result.is_err() {
            // A failed install leaves an empty canister, as on the replica.
            let c = self.canister(id)?;
            c.module = None;
            c.live = None;
            c.since_load = None;
            c.heap_written = PageSet::default();
        }
        Ok((id, out))
    }

    fn upgrade_with(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: &[u8],
        options: UpgradeOptions,
    ) -> Result<CallOutcome> {
        let module = self.module_of(wasm)?;
        let hash = module_hash(wasm);
        let before = self.save(id)?;
        let mut total = CallOutcome {
            result: Ok(Vec::new()),
            report: MessageReport::default(),
        };
        if !options.skip_pre_upgrade && before.module.exports.contains("canister_pre_upgrade") {
            let out = self.execute(
                id,
                ApiType::PreUpgrade,
                "canister_pre_upgrade",
                "",
                Vec::new(),
            )?;
            add_stage(&mut total.report, InstallStage::PreUpgrade, &out.report);
            if out.result.is_err() {
                self.load(id, &before)?;
                total.result = out.result;
                return Ok(total);
            }
        }
        // The replica decides after pre_upgrade and compiling the new module
        // (`determine_main_memory_handling`); a refusal rolls everything back.
        let keep_heap = match options.wasm_memory_persistence {
            None if before.module.enhanced_orthogonal_persistence => Err(
                "Missing upgrade option: Enhanced orthogonal persistence requires the \
                 `wasm_memory_persistence` upgrade option.",
            ),
            Some(WasmMemoryPersistence::Keep) if !module.enhanced_orthogonal_persistence => Err(
                "Invalid upgrade option: The `wasm_memory_persistence: opt Keep` upgrade \
                 option requires that the new canister module supports enhanced orthogonal \
                 persistence.",
            ),
            Some(WasmMemoryPersistence::Keep) => Ok(true),
            None | Some(WasmMemoryPersistence::Replace) => Ok(false),
        };
        let keep_heap = match keep_heap {
            Ok(keep) => keep,
            Err(message) => {
                self.load(id, &before)?;
                total.result = Err(reject(ErrorCode::CanisterContractViolation, message.into()));
                return Ok(total);
            }
        };
        let c = self.canister(id)?;
        let carried = Carried {
            stable: c
                .live
                .as_ref()
                .map(|i| i.store.data().stable.image().clone())
                .unwrap_or_default(),
            heap: if keep_heap {
                Some(match c.live.as_ref().and_then(|i| i.heap.as_ref()) {
                    // SAFETY: no Wasm runs while we copy.
                    Some(h) => HeapImage::from_pages(unsafe { h.bytes_mut() }, &c.heap_written)?,
                    None => HeapImage::default(),
                })
            } else {
                None
            },
        };
        c.version += 1;
        let started = self.start_module(
            id,
            module,
            &hash,
            carried,
            ApiType::PostUpgrade,
            "canister_post_upgrade",
            arg,
            total.report.instructions,
        );
        let failed = match &started {
            Ok(out) => out.result.is_err(),
            Err(_) => true,
        };
        if failed {
            self.canister(id)?.version -= 1;
            self.load(id, &before)?;
        }
        let out = started?;
        add_report(&mut total.report, &out.report);
        Profile::add_to_sum(&mut total.report.profile, out.report.profile.as_ref());
        if out.result.is_err() {
            total.result = out.result;
        }
        self.installed(&hash, &total);
        Ok(total)
    }

    fn reinstall(&mut self, id: Principal, wasm: &[u8], arg: &[u8]) -> Result<CallOutcome> {
        let module = self.module_of(wasm)?;
        let hash = module_hash(wasm);
        let before = self.save(id).ok();
        self.canister(id)?.version += 1;
        let out = self.start_module(
            id,
            module,
            &hash,
            Carried {
                stable: StableImage::default(),
                heap: None,
            },
            ApiType::Init,
            "canister_init",
            arg,
            0,
        )?;
        self.installed(&hash, &out);
        if out.result.is_err() {
            if let Some(before) = before {
                self.canister(id)?.version -= 1;
                self.load(id, &before)?;
            }
        }
        Ok(out)
    }

    fn update(&mut self, id: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        match self.method_export(id, method, ApiType::Update)? {
            Ok(export) => {
                let api = if export.starts_with("canister_update ") {
                    ApiType::Update
                } else {
                    ApiType::ReplicatedQuery
                };
                self.execute(id, api, &export, method, arg.to_vec())
            }
            Err(r) => Ok(CallOutcome {
                result: Err(r),
                report: MessageReport::default(),
            }),
        }
    }

    fn query(&mut self, id: Principal, method: &str, arg: &[u8]) -> Result<CallOutcome> {
        match self.method_export(id, method, ApiType::Query)? {
            Ok(export) => {
                let api = if export.starts_with("canister_composite_query ") {
                    ApiType::CompositeQuery
                } else {
                    ApiType::Query
                };
                self.execute(id, api, &export, method, arg.to_vec())
            }
            Err(r) => Ok(CallOutcome {
                result: Err(r),
                report: MessageReport::default(),
            }),
        }
    }

    fn snapshot(&mut self, id: Principal) -> Result<SnapshotId> {
        let saved = self.save(id)?;
        self.snapshots.push(Some((id, Arc::new(saved))));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    fn restore(&mut self, id: Principal, snapshot: SnapshotId) -> Result<()> {
        let (owner, saved) = match self.snapshots.get(snapshot.0 as usize) {
            Some(Some(s)) => s.clone(),
            Some(None) => bail!("snapshot {} was forgotten", snapshot.0),
            None => bail!("snapshot {} does not exist", snapshot.0),
        };
        if owner != id {
            bail!(
                "snapshot {} belongs to canister {owner}, not {id}",
                snapshot.0
            );
        }
        self.load(id, &saved)
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

    fn share(&mut self, snapshot: SnapshotId) -> Result<Option<SharedSnapshot>> {
        let (owner, saved) = match self.snapshots.get(snapshot.0 as usize) {
            Some(Some(s)) => s.clone(),
            Some(None) => bail!("snapshot {} was forgotten", snapshot.0),
            None => bail!("snapshot {} does not exist", snapshot.0),
        };
        let version = self.canister(owner)?.version;
        Ok(Some(SharedSnapshot {
            canister: owner,
            state: Arc::new(Shared { saved, version }),
        }))
    }

    fn adopt(&mut self, shared: &SharedSnapshot) -> Result<SnapshotId> {
        let Some(state) = shared.state.downcast_ref::<Shared>() else {
            bail!("the snapshot was shared by another kind of engine");
        };
        // A fork of another canister's engine gets the canister as the state left it.
        self.canisters
            .entry(shared.canister)
            .or_insert_with(|| Canister {
                module: None,
                live: None,
                heap_written: PageSet::default(),
                version: state.version,
                since_load: None,
            });
        self.snapshots
            .push(Some((shared.canister, state.saved.clone())));
        Ok(SnapshotId(self.snapshots.len() as u64 - 1))
    }

    fn forget(&mut self, snapshot: SnapshotId) -> Result<()> {
        match self.snapshots.get_mut(snapshot.0 as usize) {
            Some(slot) => {
                *slot = None;
                Ok(())
            }
            None => bail!("snapshot {} does not exist", snapshot.0),
        }
    }
}

impl EmbeddedEngine {
    /// After an install_code: a successful one adds its module to the modules the subnet
    /// expects to have compiled, whatever its mode (`process_install_code_result`).
    fn installed(&mut self, module_hash: &[u8; 32], out: &CallOutcome) {
        if out.result.is_ok() {
            self.expected_compiled_wasms.insert(*module_hash);
        }
    }

    /// [`Engine::fork`] with the concrete type, for callers that use the embedded
    /// engine's own methods (canbench sets the clock).
    pub fn fork_at(&mut self, id: Principal, snapshot: SnapshotId) -> Result<EmbeddedEngine> {
        let version = self.canister(id)?.version;
        let mut fork = EmbeddedEngine {
            limits: self.limits,
            canisters: HashMap::new(),
            // Shared, not copied: stable pages are `Arc`s replaced on write, and a frozen
            // heap is only read (each engine maps it copy-on-write).
            snapshots: self.snapshots.clone(),
            time_ns: self.time_ns,
            next_canister: self.next_canister,
            print_log: self.print_log,
            counter: self.counter,
            profiling: self.profiling,
            replica: self.replica,
            counter_reads: self.counter_reads.clone(),
            last_counter_reads: Vec::new(),
            expected_compiled_wasms: self.expected_compiled_wasms.clone(),
        };
        fork.canisters.insert(
            id,
            Canister {
                module: None,
                live: None,
                heap_written: PageSet::default(),
                version,
                since_load: None,
            },
        );
        fork.restore(id, snapshot)?;
        Ok(fork)
    }
}

/// The first bytes of an exported canister state; the number changes with the layout.
const STATE_FORMAT: &[u8; 24] = b"icbench canister state 1";

/// Reads an exported state, refusing to read past its end.
struct StateReader<'a>(&'a [u8]);

impl<'a> StateReader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            bail!("the state ends early");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
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

/// Heap bytes per OS page, re-exported for reports.
pub const HEAP_OS_PAGE: usize = OS_PAGE;
