//! A live instance of a canister's module: the wasmtime store and the handles every
//! message needs, created over a host stack deep enough for the replica's Wasm stack.

use super::*;

/// A live instance: the wasmtime store, its heap and the handles we need every message.
pub(super) struct Instance {
    pub(super) store: Store<HostState>,
    pub(super) instance: wasmtime::Instance,
    pub(super) heap: Option<Arc<HeapRegion>>,
    pub(super) counter: Global,
    /// Set to 1 by a failed instruction check right before it traps with `unreachable`.
    pub(super) out_of_instructions: Global,
    /// Mutable globals the module exports (the instrumentation exports all of them), saved
    /// and restored around messages because a trap must roll them back.
    pub(super) globals: Vec<Global>,
}

impl Instance {
    /// The mutable globals' values now.
    pub(super) fn global_values(&mut self) -> Vec<Val> {
        self.globals
            .iter()
            .map(|g| g.get(&mut self.store))
            .collect()
    }
}

pub(super) fn instantiate(module: &LoadedModule, state: HostState) -> Result<Instance> {
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
            _ if (module.native_stable || module.heap_marks)
                && name.starts_with(instrument::ICBENCH_EXPORT_PREFIX) => {}
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
    if let (Some(region), true) = (&heap, module.heap_marks) {
        let marks = instance
            .get_memory(&mut store, instrument::HEAP_MARKS_EXPORT)
            .ok_or_else(|| anyhow!("the instrumented module lacks its heap marks"))?;
        region.use_marks(marks.data_ptr(&store))?;
    }
    if let Some(region) = &heap {
        let region = region.clone();
        // SAFETY: the handler only does atomics and mprotect (async-signal-safe).
        unsafe {
            store.set_signal_handler(move |_signum, info, context| {
                // The kernel hands the handler a valid siginfo and context for SIGSEGV/SIGBUS.
                let addr = (*info).si_addr() as usize;
                region.handle_fault(addr, heap::fault_was_write(context))
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

pub(super) fn on_large_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
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

pub(super) fn heap_bytes(inst: &Instance) -> u64 {
    inst.heap.as_ref().map(|h| h.len() as u64).unwrap_or(0)
}

/// Grows the instance's heap to `want` bytes if it is smaller; returns the heap's length
/// before, from which on it is zero.
pub(super) fn grow_heap(inst: &mut Instance, want: usize) -> Result<usize> {
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
        // Putting a saved heap back is no grow of the canister's: no wasm_memory_limit
        // applies (a downloaded snapshot's heap may be larger than the default limit, as
        // the canister's own setting allowed). Queries are exempt from the limit.
        let api = std::mem::replace(&mut inst.store.data_mut().msg.api, ApiType::Query);
        let grown = memory.grow(&mut inst.store, ((want - have) / 65536) as u64);
        inst.store.data_mut().msg.api = api;
        grown?;
    }
    Ok(have)
}
