//! A message's execution: one entry point run as one message under the replica's limits,
//! in steps (begun, run, measured with the memory tracker's charges, the profile and the
//! page map it asks for, then committed or rolled back); the replica's second count of a
//! trap at a load or store; which export a call runs, and the replica's rejects.

use anyhow::{anyhow, bail, Result};
use candid::Principal;

use super::profiler::{FrameNames, Profiler, Reading};
use super::system_api::{ApiType, Closure, HostTrap, Message, Response};
use super::*;
use crate::cost::MemoryTracker;

/// The message's page map: its pages in the order they were first touched, each with the
/// function the profiler saw touch it (`touched_by`, by kind as [`Reading::touched`]).
fn page_map_of(inst: &Instance, touched_by: [Vec<String>; 4]) -> PageMap {
    let state = inst.store.data();
    let (heap_accessed, heap_written) = state
        .heap
        .as_ref()
        .map_or((Vec::new(), Vec::new()), |h| h.wasm_pages_in_order());
    let (stable_accessed, stable_written) = state.stable.wasm_pages_in_order();
    let [ha, hw, sa, sw] = &touched_by;
    PageMap {
        heap: MemoryPages::from_order(
            heap_bytes(inst) / WASM_PAGE,
            &heap_accessed,
            ha,
            &heap_written,
            hw,
        ),
        stable: MemoryPages::from_order(
            state.stable.size_wasm_pages(),
            &stable_accessed,
            sa,
            &stable_written,
            sw,
        ),
    }
}

impl EmbeddedEngine {
    /// The message's instruction limit and stable memory's dirty and accessed page limits,
    /// these in the host's OS pages (the same bytes on every host).
    fn page_limits(&self, api: ApiType) -> (u64, u64, u64) {
        let (instructions, dirty, accessed) = self.page_limits_4k(api);
        let shift = self.host.page_shift();
        (instructions, dirty >> shift, accessed >> shift)
    }

    fn page_limits_4k(&self, api: ApiType) -> (u64, u64, u64) {
        let l = &self.limits;
        match api {
            ApiType::Start | ApiType::Init | ApiType::PreUpgrade | ApiType::PostUpgrade => (
                l.max_instructions_per_install,
                l.stable_dirty_pages_install,
                l.stable_accessed_pages_install,
            ),
            // System tasks have an update's limits (the scheduler runs them as
            // `CanisterCallOrTask::Task`, with the message's instruction limits).
            ApiType::Update
            | ApiType::ReplicatedQuery
            | ApiType::Heartbeat
            | ApiType::GlobalTimer
            | ApiType::ReplyCallback
            | ApiType::RejectCallback
            | ApiType::Cleanup => (
                l.max_instructions_per_update,
                l.stable_dirty_pages_update,
                l.stable_accessed_pages_update,
            ),
            ApiType::Query | ApiType::CompositeQuery => (
                l.max_instructions_per_query,
                l.stable_dirty_pages_query,
                l.stable_accessed_pages_query,
            ),
        }
    }

    /// Runs one entry point as one message and commits or rolls back its effects.
    pub(super) fn execute(&mut self, id: Principal, entry: Entry<'_>) -> Result<CallOutcome> {
        self.execute_within(id, entry, None)
    }

    /// [`Self::execute`] with at most `budget` instructions when given (what an
    /// install_code stage has left of the shared limit); errors still name the message
    /// type's limit, as the replica's `limit_to_report` does.
    pub(super) fn execute_within(
        &mut self,
        id: Principal,
        entry: Entry<'_>,
        budget: Option<u64>,
    ) -> Result<CallOutcome> {
        let Entry {
            api,
            export,
            method,
            arg,
            part,
        } = entry;
        let (reported_limit, dirty_limit, accessed_limit) = self.page_limits(api);
        let overhead = self.limits.dirty_page_overhead;
        self.time_ns += 1;
        let setup = Setup {
            api,
            limit: budget.map_or(reported_limit, |b| b.min(reported_limit)),
            dirty_limit,
            accessed_limit,
            memory_tracker: self.page_rule(),
            os_shift: self.host.page_shift(),
            profiling: self.profiling,
            counter_reads: self.counter_reads.clone(),
            time_ns: self.time_ns,
            arming: arming(self.metering, self.page_rule().is_some(), api),
        };
        let c = self.canister(id)?;
        // The module stays the same while the message runs; a handle of our own leaves the
        // canister free to commit or roll back.
        let module = c.module.clone();
        let fresh_instance = module
            .as_ref()
            .is_some_and(|m| m.fresh_instance_per_message);
        let stale_at_heap_traps = module.as_ref().is_some_and(|m| m.stale_at_heap_traps);
        let wasm64 = module.as_ref().is_some_and(|m| m.wasm64);
        // The replica multiplies the heap's (not stable memory's) page charge for wasm64.
        let heap_page_overhead = match &module {
            Some(m) if m.wasm64 => overhead * cost::WASM64_DIRTY_PAGE_OVERHEAD_MULTIPLIER,
            _ => overhead,
        };
        let names = module.as_ref().and_then(|m| m.profile_names.as_ref());
        let inst = c.instance(id)?;
        let target = Target::of(inst, export, part.callback)?;
        // Kept for running the message again, which needs its part as it was.
        let again_part = stale_at_heap_traps.then(|| part.clone());
        let before = begin_message(inst, &setup, method, arg, part, names)?;
        let (mut result, dirty) = run(inst, target)?;
        let measured = measure(
            inst,
            &setup,
            export,
            names,
            &mut result,
            os_pages_written(&dirty, setup.os_shift),
            (heap_page_overhead, overhead),
        );
        let counter_reads = std::mem::take(&mut inst.store.data_mut().reads);
        let response = inst.store.data_mut().msg.response.take();
        let sent = std::mem::take(&mut inst.store.data_mut().msg.calls);
        // The count at a load or store that trapped is in no global: the message runs again
        // from the state before it, unless that state is gone.
        let count_again = (stale_at_heap_traps
            && setup.arming.undo
            && matches!(&result, Err(e) if e.downcast_ref::<wasmtime::Trap>()
                == Some(&wasmtime::Trap::MemoryOutOfBounds)))
        .then(|| std::mem::take(&mut inst.store.data_mut().msg.arg));
        let (answer, trapped) = (response.clone(), result.is_err());
        let outcome = match &result {
            Ok(()) => reply_of(id, api, response),
            Err(e) => Err(trap_to_reject(id, e, reported_limit)),
        };
        let persist = result.is_ok() && !api.discards_state();
        let (heap_before, stable_before) = (before.heap, before.stable);
        if let (false, false, Err(reject)) = (persist, setup.arming.undo, &outcome) {
            // A failed message that kept nothing to roll back with: the canister is given up.
            c.live = None;
            c.lost = Some(format!(
                "{method} failed ({reject}) with nothing kept to roll back"
            ));
            self.last_counter_reads = counter_reads;
            self.sent = Vec::new();
            (self.answer, self.trapped) = (answer, trapped);
            return Ok(CallOutcome {
                result: outcome,
                report: MessageReport::default(),
            });
        }
        let (heap_after, mut restart) = end_message(c, persist, &dirty, before, setup.time_ns)?;
        if restart.is_none() && fresh_instance {
            restart = Some(self.save(id)?);
        }
        if let Some(saved) = restart {
            self.load_keeping_log(id, &saved)?;
        }
        self.last_counter_reads = counter_reads;
        // A trapped message's calls are never sent; its cycles return with the rollback.
        self.sent = if persist { sent } else { Vec::new() };
        (self.answer, self.trapped) = (answer, trapped);
        let (instructions, outcome) = match count_again {
            Some(arg) => {
                let entry = Entry {
                    api,
                    export,
                    method,
                    arg,
                    part: again_part.unwrap_or_default(),
                };
                let again = self.count_with_global_counter(id, entry, budget, setup.time_ns)?;
                (again.report.instructions, again.result)
            }
            None => (measured.instructions, outcome),
        };
        let stable_after = self
            .canister(id)?
            .live
            .as_ref()
            .map(|i| i.store.data().stable.image().size_bytes())
            .unwrap_or(0);
        Ok(CallOutcome {
            result: outcome,
            report: MessageReport {
                instructions,
                heap_dirty_pages: dirty.len() as u64,
                stable_dirty_pages: measured.stable_dirty,
                pages: Some(measured.page_counts),
                page_map: measured.page_map,
                heap_bytes_before: heap_before,
                heap_bytes_after: heap_after,
                stable_bytes_before: stable_before,
                stable_bytes_after: stable_after,
                wasm64,
                stages: Vec::new(),
                profile: measured.profile,
            },
        })
    }

    /// Runs a message that trapped at a load or store again from the state before it (the
    /// canister's state now, the trap having rolled it back), on the module's variant with
    /// [`Counter::Global`], and gives its outcome: the same trap, counted as the replica
    /// counts it. The canister is left as it was, on its own module, with the message's log.
    fn count_with_global_counter(
        &mut self,
        id: Principal,
        entry: Entry<'_>,
        budget: Option<u64>,
        time_ns: u64,
    ) -> Result<CallOutcome> {
        let before = self.save(id)?;
        let global = SavedState {
            module: load_variant(&before.module.raw, Counter::Global, false)?,
            ..before.clone()
        };
        let profiling = std::mem::replace(&mut self.profiling, Profiling::Off);
        let print_log = std::mem::replace(&mut self.print_log, false);
        self.time_ns = time_ns - 1;
        let again = self
            .load(id, &global)
            .and_then(|()| self.execute_within(id, entry, budget));
        self.profiling = profiling;
        self.print_log = print_log;
        self.time_ns = time_ns;
        self.load_keeping_log(id, &before)?;
        again
    }
}

/// An entry point run as one message: its kind, its export (for a callback, the name its
/// profile's root frame gets), the method it serves (empty for the install stages), its
/// argument, and where it stands in a call tree.
pub(super) struct Entry<'a> {
    pub api: ApiType,
    pub export: &'a str,
    pub method: &'a str,
    pub arg: Vec<u8>,
    pub part: Part,
}

/// What a message that is part of a call tree sees beyond its argument: who called, the
/// closure a callback runs, the reject a reject callback reads, and whether its call context
/// was already answered. The default is an ingress message's.
#[derive(Clone, Debug, Default)]
pub(super) struct Part {
    pub caller: Option<Vec<u8>>,
    pub callback: Option<Closure>,
    pub reject: Option<(u32, String)>,
    pub replied: bool,
}

/// What a message calls: an export without parameters and results, or a callback, a
/// function of the module's table called with its closure's value (with the local counter,
/// the counter passed in and returned as the export wrappers do).
enum Target {
    Export(wasmtime::TypedFunc<(), ()>),
    Callback {
        func: wasmtime::Func,
        env: Val,
        local_counter: bool,
    },
}

impl Target {
    fn of(inst: &mut Instance, export: &str, callback: Option<Closure>) -> Result<Target> {
        let Some(closure) = callback else {
            let func = inst
                .instance
                .get_typed_func::<(), ()>(&mut inst.store, export)
                .map_err(|e| {
                    anyhow!(
                        "export {export:?} is not a function without parameters and results: {e}"
                    )
                })?;
            return Ok(Target::Export(func));
        };
        let table = inst
            .instance
            .exports(&mut inst.store)
            .find_map(|e| e.into_table())
            .ok_or_else(|| anyhow!("a callback, but the module has no table"))?;
        let func = table
            .get(&mut inst.store, u64::from(closure.func))
            .and_then(|r| r.as_func().flatten().copied())
            .ok_or_else(|| anyhow!("callback {} is not a function of the table", closure.func))?;
        let params: Vec<wasmtime::ValType> = func.ty(&inst.store).params().collect();
        let env = match params.first() {
            Some(wasmtime::ValType::I64) => Val::I64(closure.env as i64),
            Some(wasmtime::ValType::I32) => Val::I32(closure.env as u32 as i32),
            _ => bail!(
                "callback {} does not take its closure's value",
                closure.func
            ),
        };
        Ok(Target::Callback {
            func,
            env,
            local_counter: params.len() == 2,
        })
    }
}

/// What a message runs under, read off the engine before it starts.
struct Setup {
    api: ApiType,
    /// The message's instruction limit (the budget's, if smaller).
    limit: u64,
    /// Stable memory's page limits, in OS pages.
    dirty_limit: u64,
    accessed_limit: u64,
    /// The memory tracker's rule on the host, when the vintage has it.
    memory_tracker: Option<MemoryTracker>,
    /// The host's OS page as a shift of the 4 KiB page.
    os_shift: u32,
    profiling: Profiling,
    counter_reads: CounterReads,
    time_ns: u64,
    /// How the heap tracks the message ([`Metering`]).
    arming: Arming,
}

/// How the heap tracks a message sent for `metering`, under a vintage that charges by the
/// memory tracker (`tracker`) or not. Sent for its state alone, a message tracks the Wasm
/// pages it accesses only where the tracker charges them (its charges are in what
/// `ic0.performance_counter` returns, which the state may keep); names every 4 KiB page of
/// each Wasm page it writes as written there (no charge depends on them); and an update
/// keeps no old bytes.
fn arming(metering: Metering, tracker: bool, api: ApiType) -> Arming {
    match metering {
        Metering::Exact => Arming::EXACT,
        Metering::StateOnly => Arming {
            track_access: tracker,
            whole_wasm_pages: tracker,
            undo: api.discards_state(),
        },
    }
}

/// The host's OS pages (of `1 << shift` 4 KiB pages) among the heap's written 4 KiB `pages`.
fn os_pages_written(pages: &[u32], shift: u32) -> u64 {
    if shift == 0 {
        return pages.len() as u64;
    }
    let mut os: Vec<u32> = pages.iter().map(|p| p >> shift).collect();
    os.sort_unstable();
    os.dedup();
    os.len() as u64
}

/// What a failed message rolls back to: the heap's size, the mutable globals, and what the
/// System API changes outside memory; and stable memory's size, for the report.
struct Before {
    heap: u64,
    globals: Vec<Val>,
    stable: u64,
    certified_data: Vec<u8>,
    global_timer: u64,
}

/// Starts the message on `inst`: its context, the trackers, the profiler and the counter
/// set up, the heap armed. Gives what the message may have to roll back.
fn begin_message(
    inst: &mut Instance,
    setup: &Setup,
    method: &str,
    arg: Vec<u8>,
    part: Part,
    names: Option<&FrameNames>,
) -> Result<Before> {
    let (api, limit) = (setup.api, setup.limit);
    let heap = heap_bytes(inst);
    let globals = inst.global_values();
    {
        let state = inst.store.data_mut();
        state.msg = Message::new(api, method, arg, limit);
        if let Some(caller) = part.caller {
            state.msg.caller = caller;
        }
        state.msg.reject = part.reject;
        state.msg.replied = part.replied;
        state.log.clear();
        state.time_ns = setup.time_ns;
        // Wasm pages are counted under every vintage (the results' page columns);
        // only the tracker's vintages charge for them.
        state.stable.set_os_page_shift(setup.os_shift);
        state
            .stable
            .begin(setup.dirty_limit, setup.accessed_limit, true);
        // Queries run without modification tracking (`ModificationTracking::Ignore`):
        // the tracker charges them for access only.
        state
            .tracker
            .begin(setup.memory_tracker, !api.ignores_modifications());
        if let Some(native) = &mut state.native_stable {
            native.begin();
        }
        state.counter_reads = setup.counter_reads.clone();
        state.reads.clear();
        state.profiler = match (setup.profiling, names) {
            (Profiling::Off, _) | (_, None) => None,
            (Profiling::Messages, Some(_)) => Some(Profiler::new(limit, None)),
            (Profiling::BetweenCounterReads, Some(n)) => {
                // A module that never reads the counter measures nothing.
                Some(Profiler::new(
                    limit,
                    Some(n.performance_counter.unwrap_or(u32::MAX)),
                ))
            }
        };
    }
    system_api::sync_native_size(&mut inst.store)?;
    let data = inst.store.data();
    let before = Before {
        heap,
        globals,
        stable: data.stable.image().size_bytes(),
        certified_data: data.certified_data.clone(),
        global_timer: data.global_timer,
    };
    inst.counter.set(&mut inst.store, Val::I64(limit as i64))?;
    if let Some(h) = &inst.heap {
        h.arm(setup.arming)?;
    }
    Ok(before)
}

/// Runs `func` on a large enough stack; gives how it ended (a failed instruction check as
/// [`HostTrap::OutOfInstructions`]) and the heap pages it wrote.
fn run(inst: &mut Instance, target: Target) -> Result<(wasmtime::Result<()>, Vec<u32>)> {
    let store = &mut inst.store;
    let counter = inst.counter;
    let mut result = on_large_stack(move || match target {
        Target::Export(func) => func.call(store, ()),
        Target::Callback {
            func,
            env,
            local_counter: false,
        } => func.call(store, &[env], &mut []),
        Target::Callback {
            func,
            env,
            local_counter: true,
        } => {
            let left = counter.get(&mut *store);
            let mut out = [Val::I64(0)];
            func.call(&mut *store, &[env, left], &mut out)?;
            counter.set(&mut *store, out[0])
        }
    });
    {
        // Stable memory as the injected functions left it in their cache.
        let state = inst.store.data_mut();
        if let Some(native) = &mut state.native_stable {
            native.finish(&mut state.stable);
        }
    }
    if result.is_err() && inst.out_of_instructions.get(&mut inst.store).unwrap_i32() != 0 {
        // A failed instruction check, not the module's own `unreachable`.
        inst.out_of_instructions.set(&mut inst.store, Val::I32(0))?;
        result = Err(wasmtime::Error::new(HostTrap::OutOfInstructions));
    }
    let dirty = match &inst.heap {
        Some(h) => h.disarm()?,
        None => Vec::new(),
    };
    Ok((result, dirty))
}

/// What a message's run measured: its instructions, the pages it wrote and touched, and
/// its profile and page map when profiled.
struct Measured {
    instructions: u64,
    stable_dirty: u64,
    page_counts: PageCounts,
    profile: Option<Profile>,
    page_map: Option<PageMap>,
}

/// Counts the message that ran on `inst` (having written `heap_dirty` of the host's OS pages
/// of the heap, charged `overheads` = (heap, stable) each): the counter, the memory tracker's
/// charges not yet taken from it (which may leave `result` out of instructions), and before
/// the tracker the heap's written pages.
fn measure(
    inst: &mut Instance,
    setup: &Setup,
    export: &str,
    names: Option<&FrameNames>,
    result: &mut wasmtime::Result<()>,
    heap_dirty: u64,
    (heap_page_overhead, overhead): (u64, u64),
) -> Measured {
    let (api, limit, memory_tracker) = (setup.api, setup.limit, setup.memory_tracker);
    let left = inst.counter.get(&mut inst.store).unwrap_i64();
    // The memory tracker's charges since the last System API call.
    let pages = inst.store.data().page_charges();
    let unfolded = pages.total() - inst.store.data().tracker.folded();
    let left_with_pages = left.saturating_sub(unfolded.min(i64::MAX as u64) as i64);
    if left_with_pages < 0 {
        // The replica's counter went below zero at a page fault: it stops at its next
        // check, out of instructions, whatever the code did after that here.
        *result = Err(wasmtime::Error::new(HostTrap::OutOfInstructions));
    }
    let mut instructions = (limit as i64)
        .saturating_sub(left_with_pages)
        .clamp(0, limit as i64) as u64;
    // Before the memory tracker, written heap pages are charged after the message, and
    // only where it tracks modifications. Composite queries keep what icbench charged
    // them before it told them from queries: nothing.
    let charged_pages = if memory_tracker.is_some()
        || api.ignores_modifications()
        || api == ApiType::CompositeQuery
    {
        0
    } else {
        heap_dirty
    };
    instructions += charged_pages * heap_page_overhead;
    let stable_dirty = inst.store.data().stable.dirty_pages();
    let stable_dirty_os = inst.store.data().stable.dirty_os_pages();
    // What the vintage charged for pages: the tracker's charges, or before it the heap's
    // written pages after the message and stable memory's in `stable*_write`.
    let page_counts = inst.store.data().page_counts(match memory_tracker {
        Some(_) => pages.total(),
        None => charged_pages * heap_page_overhead + stable_dirty_os * overhead,
    });
    let end = Reading {
        counter: left,
        pages,
        folded: inst.store.data().tracker.folded(),
        touched: inst.store.data().pages_touched(),
    };
    let mut page_map = None;
    let profile = match (inst.store.data_mut().profiler.take(), names) {
        (Some(profiler), Some(names)) => {
            let (mut profile, touched_by) =
                profiler.finish_with_touches(end, &|f| names.name(f), export);
            if setup.profiling == Profiling::Messages {
                page_map = Some(page_map_of(inst, touched_by));
                if memory_tracker.is_none() {
                    profile.add(
                        &[profile::HEAP_DIRTY_PAGES],
                        charged_pages * heap_page_overhead,
                    );
                }
            }
            Some(profile)
        }
        _ => None,
    };
    Measured {
        instructions,
        stable_dirty,
        page_counts,
        profile,
        page_map,
    }
}

/// The reply of a message that ran to its end: its reply or reject, or, from an entry
/// point that must answer, none.
fn reply_of(id: Principal, api: ApiType, response: Option<Response>) -> Result<Vec<u8>, Reject> {
    match response {
        Some(Response::Reply(bytes)) => Ok(bytes),
        Some(Response::Reject(text)) => Err(Reject {
            code: ErrorCode::CanisterRejectedMessage.reject_code(),
            error_code: ErrorCode::CanisterRejectedMessage,
            message: text,
        }),
        None if matches!(
            api,
            ApiType::Update | ApiType::ReplicatedQuery | ApiType::Query | ApiType::CompositeQuery
        ) =>
        {
            Err(reject(
                ErrorCode::CanisterDidNotReply,
                format!("Canister {id} did not produce a response"),
            ))
        }
        None => Ok(Vec::new()),
    }
}

/// Commits the message's effects on `c` (`persist`) or rolls them back to `before`; the
/// heap's `dirty` pages are those it wrote, and `time_ns` its time. Gives the heap's size
/// after, and the state to load again when the instance cannot be rolled back in place (its
/// heap grew).
fn end_message(
    c: &mut Canister,
    persist: bool,
    dirty: &[u32],
    before: Before,
    time_ns: u64,
) -> Result<(u64, Option<SavedState>)> {
    let inst = c
        .live
        .as_mut()
        .ok_or_else(|| anyhow!("a message ended without an instance"))?;
    if persist {
        inst.store.data_mut().stable.commit();
        if let Some(h) = &inst.heap {
            h.keep(dirty)?;
            c.heap_written.extend(dirty.iter().copied());
            if let Some(since) = &mut c.since_load {
                since.pages.extend(dirty);
            }
        }
        return Ok((heap_bytes(inst), None));
    }
    inst.store.data_mut().stable.rollback();
    let state = inst.store.data_mut();
    (state.certified_data, state.global_timer) = (before.certified_data, before.global_timer);
    if let Some(h) = &inst.heap {
        h.roll_back(dirty)?;
    }
    if heap_bytes(inst) == before.heap {
        for (g, v) in inst.globals.iter().zip(before.globals) {
            g.set(&mut inst.store, v)?;
        }
        return Ok((before.heap, None));
    }
    // Wasm memory cannot shrink: start over from the committed state.
    let data = inst.store.data();
    let restart = SavedState {
        module: c
            .module
            .clone()
            .ok_or_else(|| anyhow!("a live instance without a module"))?,
        heap: frozen_committed(&c.since_load, inst, before.heap as usize, &c.heap_written)?,
        globals: before.globals,
        stable: data.stable.image().clone(),
        certified_data: data.certified_data.clone(),
        global_timer: data.global_timer,
        time_ns,
    };
    Ok((before.heap, Some(restart)))
}

impl EmbeddedEngine {
    /// An update call (`api` [`ApiType::Update`]) or a query call ([`ApiType::Query`]) of
    /// `method`, run as the kind of method the module exports it as.
    pub(super) fn call(
        &mut self,
        id: Principal,
        api: ApiType,
        method: &str,
        arg: &[u8],
    ) -> Result<CallOutcome> {
        let export = match self.method_export(id, method, api)? {
            Ok(export) => export,
            Err(r) => {
                return Ok(CallOutcome {
                    result: Err(r),
                    report: MessageReport::default(),
                })
            }
        };
        let api = match api {
            ApiType::Update if !export.starts_with("canister_update ") => ApiType::ReplicatedQuery,
            ApiType::Query if export.starts_with("canister_composite_query ") => {
                ApiType::CompositeQuery
            }
            api => api,
        };
        let entry = Entry {
            api,
            export: &export,
            method,
            arg: arg.to_vec(),
            part: Part {
                caller: self.caller.clone(),
                ..Part::default()
            },
        };
        self.execute(id, entry)
    }

    pub(super) fn method_export(
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

pub(super) fn reject(error_code: ErrorCode, message: String) -> Reject {
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
