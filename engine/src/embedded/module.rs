//! Modules: wasmtime's one engine, a canister module instrumented as the replica
//! instruments it, compiled (or taken from the compile cache), linked with the System API,
//! and what loading found out about it. A message's execution is in the parent module.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

use super::memory::write_log::heap_marks_configured;
use wasmtime::{InstancePre, Linker, Module};

use super::memory::heap::{self, HeapCreator};
use super::profiler::{FrameNames, Reading};
use super::system_api::{self, HostState, HostTrap};
use super::MAX_WASM_STACK;
use crate::cost;
use crate::disk_cache;
use crate::instrument::{self, Counter};
use crate::Profiling;

/// One wasmtime engine per process: compiled modules are shared between canisters.
pub(super) fn wasmtime_engine() -> &'static wasmtime::Engine {
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = wasmtime::Config::new();
        config
            .cranelift_nan_canonicalization(true) // determinism, as the replica
            // wasmtime checks the Wasm stack against the async stack size even for sync calls.
            .async_stack_size(MAX_WASM_STACK + (1 << 20))
            .max_wasm_stack(MAX_WASM_STACK)
            // Data segments are copied into our own heap mappings (no copy-on-write images).
            .memory_init_cow(false)
            .wasm_simd(true)
            .wasm_bulk_memory(true)
            .wasm_multi_value(true)
            .wasm_tail_call(true)
            .wasm_memory64(true)
            // The native stable accesses' cache and marks (the canister's own module has one
            // memory: instrumentation checks that).
            .wasm_multi_memory(true)
            // wasmtime's default on 64-bit hosts; the untracked memories reserve as much.
            .memory_reservation(heap::MEMORY_RESERVATION as u64)
            .with_host_memory(Arc::new(HeapCreator));
        perf_map_if_asked(&mut config);
        wasmtime::Engine::new(&config)
            .expect("the embedded engine's wasmtime configuration is valid")
    })
}

/// With `ICBENCH_PERF_MAP=1`, for `perf record`: wasmtime names the compiled functions in
/// /tmp/perf-PID.map. Changes no count and no cache key.
pub fn perf_map_if_asked(config: &mut wasmtime::Config) {
    if std::env::var_os("ICBENCH_PERF_MAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
}

/// A module ready to instantiate: instrumented, compiled and linked once, then cached.
pub struct LoadedModule {
    pub(super) pre: InstancePre<HostState>,
    pub(super) update_methods: HashSet<String>,
    pub(super) query_methods: HashSet<String>,
    pub(super) exports: HashSet<String>,
    /// Instructions the replica charges at install for compiling the module.
    pub compile_instructions: u64,
    /// Messages can change tables or drop segments: such a module gets a fresh instance
    /// after every message, as on the replica (which instantiates per message).
    pub(super) fresh_instance_per_message: bool,
    /// Its instances answer some stable memory accesses natively
    /// (`instrument::STABLE_CACHE_EXPORT`).
    pub(super) native_stable: bool,
    /// Its code finds its first touches of heap pages itself (`instrument::HEAP_MARKS_EXPORT`).
    pub(super) heap_marks: bool,
    /// The heap is a 64-bit memory.
    pub wasm64: bool,
    /// The module declares Motoko's enhanced orthogonal persistence (the metadata section
    /// `enhanced-orthogonal-persistence`): its state lives in the heap, so an upgrade must
    /// say what happens to the heap.
    pub enhanced_orthogonal_persistence: bool,
    pub wasm_hash: [u8; 32],
    /// The module as installed (decompressed), from which the other variant is made.
    pub(super) raw: Arc<[u8]>,
    /// Where the code keeps the counter, as requested (the variant keeps the request).
    pub(super) requested_counter: Counter,
    /// Instrumented with the profiling probes: then the names of its frames.
    pub(super) profile_names: Option<FrameNames>,
    /// A trap at a load or store can leave the counter global behind
    /// ([`instrument::stale_at_heap_traps`]): such a message is counted again.
    pub(super) stale_at_heap_traps: bool,
}

/// What loading found out about a module, sorted so it compares: a module from the compile
/// cache must give exactly these facts of the module compiled (the counts depend on them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFacts {
    pub update_methods: Vec<String>,
    pub query_methods: Vec<String>,
    /// Every export with its type, as wasmtime sees the compiled module.
    pub exports: Vec<String>,
    /// Every import with its type.
    pub imports: Vec<String>,
    pub compile_instructions: u64,
    pub fresh_instance_per_message: bool,
    pub wasm64: bool,
    pub enhanced_orthogonal_persistence: bool,
    pub wasm_hash: [u8; 32],
}

impl LoadedModule {
    pub fn facts(&self) -> ModuleFacts {
        let sorted = |set: &HashSet<String>| {
            let mut v: Vec<String> = set.iter().cloned().collect();
            v.sort();
            v
        };
        let module = self.pre.module();
        let mut exports: Vec<String> = module
            .exports()
            .map(|e| format!("{} {:?}", e.name(), e.ty()))
            .collect();
        exports.sort();
        let mut imports: Vec<String> = module
            .imports()
            .map(|i| format!("{} {} {:?}", i.module(), i.name(), i.ty()))
            .collect();
        imports.sort();
        ModuleFacts {
            update_methods: sorted(&self.update_methods),
            query_methods: sorted(&self.query_methods),
            exports,
            imports,
            compile_instructions: self.compile_instructions,
            fresh_instance_per_message: self.fresh_instance_per_message,
            wasm64: self.wasm64,
            enhanced_orthogonal_persistence: self.enhanced_orthogonal_persistence,
            wasm_hash: self.wasm_hash,
        }
    }
}

/// Turns canister module bytes (raw or gzipped) into a runnable module, or says why not.
/// `counter` is where the metered code keeps the instruction counter (same counts).
/// Modules are kept in memory for the process and, once [`disk_cache::enable`]d, compiled
/// modules on disk across processes.
pub fn load_module(wasm: &[u8], counter: Counter) -> Result<Arc<LoadedModule>> {
    load_variant(&decompress(wasm)?, counter, false)
}

/// [`load_module`] of a decompressed module, with the profiling probes when `profile`.
pub(super) fn load_variant(
    raw: &[u8],
    counter: Counter,
    profile: bool,
) -> Result<Arc<LoadedModule>> {
    load_kept(raw, counter, profile, disk_cache::dir().as_deref())
}

/// [`load_variant`] through the compile cache in `dir` (None: no disk cache).
fn load_kept(
    raw: &[u8],
    counter: Counter,
    profile: bool,
    dir: Option<&Path>,
) -> Result<Arc<LoadedModule>> {
    // A slot per module: threads that load the same module at once (canisters made side
    // by side) wait for the one compile instead of each compiling it.
    type Slot = Arc<Mutex<Option<Arc<LoadedModule>>>>;
    type Cache = HashMap<([u8; 32], Counter, bool), Slot>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let hash: [u8; 32] = Sha256::digest(raw).into();
    let slot = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((hash, counter, profile))
        .or_default()
        .clone();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = slot.as_ref() {
        return Ok(m.clone());
    }
    let loaded = match dir {
        Some(dir) => load_through(dir, raw, hash, counter, profile)?.0,
        None => Arc::new(link(compile(raw, counter, profile)?, raw, hash, counter)?),
    };
    *slot = Some(loaded.clone());
    Ok(loaded)
}

/// Where a module came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Instrumented and compiled now.
    Compiled,
    /// Loaded from the compile cache.
    Cache,
}

/// [`load_module`] through the compile cache in `dir`, bypassing the process's memory
/// cache and the cache directory chosen for the process; says where the module came from.
pub fn load_module_cached(
    wasm: &[u8],
    counter: Counter,
    dir: &Path,
) -> Result<(Arc<LoadedModule>, Origin)> {
    let raw = decompress(wasm)?;
    let hash: [u8; 32] = Sha256::digest(&raw).into();
    load_through(dir, &raw, hash, counter, false)
}

/// [`load_module`] (with the profiling probes when `profiled`) through the compile cache in
/// `dir` rather than the directory chosen for the process, kept in the process's memory
/// cache like any loaded module: a test process shares with the icbench runs it starts the
/// modules both use, compiled once.
pub fn load_module_kept(
    wasm: &[u8],
    counter: Counter,
    profiled: bool,
    dir: &Path,
) -> Result<Arc<LoadedModule>> {
    load_kept(&decompress(wasm)?, counter, profiled, Some(dir))
}

/// A module compiled from its instrumented code, and what instrumenting it found: exactly
/// what a compile cache entry holds.
struct Compiled {
    module: Module,
    wasm_instruction_count: u64,
    memory64: bool,
    mutates_instance: bool,
    /// Calls to `stable64_read`/`write` go to the injected native accesses.
    native_stable: bool,
    /// The code checks heap marks.
    heap_marks: bool,
    /// Where the code keeps the counter: the requested placement unless the module forced
    /// the fallback, which decides the System API's signatures.
    counter: Counter,
    /// With the profiling probes (part of the cache key, not of the entry).
    profiled: bool,
}

impl Compiled {
    /// The entry's meta part: the instruction count, the four flags as bytes 0/1, then the
    /// counter placement (0 global, 1 local).
    fn meta(&self) -> Vec<u8> {
        let mut m = self.wasm_instruction_count.to_le_bytes().to_vec();
        m.push(self.memory64 as u8);
        m.push(self.mutates_instance as u8);
        m.push(self.native_stable as u8);
        m.push(self.heap_marks as u8);
        m.push(match self.counter {
            Counter::Global => 0,
            Counter::Local => 1,
        });
        m
    }

    fn from_meta(meta: &[u8], module: Module, profiled: bool) -> Result<Compiled> {
        let flag = |b: u8| match b {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(anyhow!("a flag byte is {b}, not 0 or 1")),
        };
        let [n @ .., memory64, mutates, native, marks, counter] = meta else {
            bail!("the meta part is {} bytes, not 13", meta.len());
        };
        let n: [u8; 8] = n
            .try_into()
            .map_err(|_| anyhow!("the meta part is {} bytes, not 13", meta.len()))?;
        let counter = match counter {
            0 => Counter::Global,
            1 => Counter::Local,
            b => bail!("the counter byte is {b}, not 0 or 1"),
        };
        Ok(Compiled {
            module,
            wasm_instruction_count: u64::from_le_bytes(n),
            memory64: flag(*memory64)?,
            mutates_instance: flag(*mutates)?,
            native_stable: flag(*native)?,
            heap_marks: flag(*marks)?,
            counter,
            profiled,
        })
    }
}

fn compile(raw: &[u8], counter: Counter, profiled: bool) -> Result<Compiled> {
    // wasmtime compiles on a pool of threads a worker copy does not have (only the forking
    // thread goes on): a compile there would wait forever.
    if crate::worker::in_worker() {
        bail!("internal error: a worker process was asked to compile a module (modules are compiled before the workers fork)");
    }
    let instrumented =
        instrument::instrument_options(raw, counter, profiled, heap_marks_configured())
            .map_err(|e| anyhow!("{e}"))?;
    let module = Module::new(wasmtime_engine(), &instrumented.wasm)
        .map_err(|e| anyhow!("invalid module: {e:#}"))?;
    Ok(Compiled {
        module,
        wasm_instruction_count: instrumented.wasm_instruction_count,
        memory64: instrumented.memory64,
        mutates_instance: instrumented.mutates_instance,
        native_stable: instrumented.native_stable,
        heap_marks: instrumented.heap_marks,
        counter: instrumented.counter,
        profiled,
    })
}

/// The compile cache key: everything that decides the compiled code and the metadata in
/// the entry. The module (hash of the raw Wasm), the counter choice, wasmtime's own
/// compatibility hash of the engine configuration (target, ISA flags, tunables, features,
/// wasmtime version), the engine's version and the build fingerprint of its sources and
/// Cargo.lock (build.rs), so editing the instrumentation invalidates old entries.
pub(super) fn module_key(hash: &[u8; 32], counter: Counter, profiled: bool) -> [u8; 32] {
    use std::hash::Hash;
    let mut h = disk_cache::ShaHasher(Sha256::new());
    h.0.update(b"icbench compiled module\0");
    h.0.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.0.update(b"\0");
    h.0.update(env!("ICBENCH_ENGINE_FINGERPRINT").as_bytes());
    h.0.update(format!("\0{counter:?}\0").as_bytes());
    if profiled {
        h.0.update(b"profiled\0");
    }
    if !heap_marks_configured() {
        h.0.update(b"no heap marks\0");
    }
    wasmtime_engine()
        .precompile_compatibility_hash()
        .hash(&mut h);
    h.0.update(hash);
    h.0.finalize().into()
}

/// Loads the compiled module from the cache in `dir` if an intact entry is there, else
/// compiles it and stores it. A damaged entry is reported and replaced; a cache that
/// cannot be read or written is reported once and the module compiled.
fn load_through(
    dir: &Path,
    raw: &[u8],
    hash: [u8; 32],
    counter: Counter,
    profiled: bool,
) -> Result<(Arc<LoadedModule>, Origin)> {
    let key = module_key(&hash, counter, profiled);
    match disk_cache::read(dir, disk_cache::MODULES, &key) {
        Ok(disk_cache::Lookup::Found(entry)) => {
            // SAFETY: the payload is what `Module::serialize` wrote for this key: the
            // header names the key and its SHA-256 matches, checked by `read`. wasmtime
            // also refuses artifacts of another version or configuration.
            let module = unsafe { Module::deserialize(wasmtime_engine(), entry.payload()) };
            let compiled = module
                .map_err(|e| anyhow!("wasmtime refuses it: {e:#}"))
                .and_then(|m| Compiled::from_meta(entry.meta(), m, profiled));
            match compiled {
                Ok(c) => {
                    disk_cache::count_hit(disk_cache::MODULES);
                    return Ok((Arc::new(link(c, raw, hash, counter)?), Origin::Cache));
                }
                Err(e) => {
                    disk_cache::count_rejected(disk_cache::MODULES);
                    let path = disk_cache::entry_path(dir, disk_cache::MODULES, &key);
                    eprintln!(
                        "warning: cache entry {}: {e:#}; compiling again",
                        path.display()
                    )
                }
            }
        }
        Ok(disk_cache::Lookup::Missing) => {}
        Ok(disk_cache::Lookup::Damaged(e)) => eprintln!("warning: {e:#}; compiling again"),
        Err(e) => disk_cache::warn_once("the compile cache cannot be read", &e),
    }
    let compiled = compile(raw, counter, profiled)?;
    disk_cache::count_miss(disk_cache::MODULES);
    let stored = compiled
        .module
        .serialize()
        .map_err(|e| anyhow!("serializing the compiled module: {e:#}"))
        .and_then(|payload| {
            disk_cache::write(dir, disk_cache::MODULES, &key, &compiled.meta(), &payload)
        });
    if let Err(e) = stored {
        disk_cache::warn_once("the compile cache cannot be written", &e);
    }
    Ok((
        Arc::new(link(compiled, raw, hash, counter)?),
        Origin::Compiled,
    ))
}

/// Links a compiled module with the System API and reads what messages need from it.
fn link(
    compiled: Compiled,
    raw: &[u8],
    hash: [u8; 32],
    requested_counter: Counter,
) -> Result<LoadedModule> {
    let Compiled {
        module,
        wasm_instruction_count,
        memory64,
        mutates_instance,
        native_stable,
        heap_marks,
        counter,
        profiled,
    } = compiled;
    let engine = wasmtime_engine();
    let mut linker: Linker<HostState> = Linker::new(engine);
    linker.func_wrap(
        instrument::SYSTEM_MODULE,
        instrument::OUT_OF_INSTRUCTIONS_IMPORT,
        || -> wasmtime::Result<()> { Err(wasmtime::Error::new(HostTrap::OutOfInstructions)) },
    )?;
    if heap_marks {
        linker.func_wrap(
            instrument::SYSTEM_MODULE,
            instrument::HEAP_TOUCH_IMPORT,
            |c: wasmtime::Caller<'_, HostState>, start: u64, len: u64, kind: i32, source: u64| {
                if let Some(heap) = &c.data().heap {
                    heap.touch_request(start, len, kind, source);
                }
            },
        )?;
    }
    if profiled {
        // Only profiled modules import these: an unprofiled run executes no probe at all.
        linker.func_wrap(
            instrument::SYSTEM_MODULE,
            instrument::PROFILE_ENTER_IMPORT,
            |mut c: wasmtime::Caller<'_, HostState>, func: i32, counter: i64| {
                let at = reading(c.data(), counter);
                if let Some(p) = &mut c.data_mut().profiler {
                    p.enter(func as u32, at);
                }
            },
        )?;
        linker.func_wrap(
            instrument::SYSTEM_MODULE,
            instrument::PROFILE_EXIT_IMPORT,
            |mut c: wasmtime::Caller<'_, HostState>, counter: i64| {
                let at = reading(c.data(), counter);
                if let Some(p) = &mut c.data_mut().profiler {
                    p.exit(at);
                }
            },
        )?;
    }
    system_api::link(&mut linker, &module, memory64, counter)
        .map_err(|e| anyhow!("invalid module: {e:#}"))?;
    let pre = linker
        .instantiate_pre(&module)
        .map_err(|e| anyhow!("invalid module: {e:#}"))?;

    let mut update_methods = HashSet::new();
    let mut query_methods = HashSet::new();
    let mut exports = HashSet::new();
    for export in module.exports() {
        let name = export.name();
        exports.insert(name.to_string());
        let (kind, method) = match name.split_once(' ') {
            Some((kind, method)) => (kind, method),
            None => continue,
        };
        let set = match kind {
            "canister_update" => &mut update_methods,
            "canister_query" | "canister_composite_query" => &mut query_methods,
            _ => continue,
        };
        if !set.insert(method.to_string()) {
            bail!("invalid module: method {method:?} is exported more than once");
        }
    }
    if let Some(m) = update_methods.intersection(&query_methods).next() {
        bail!("invalid module: {m:?} is exported both as an update and as a query method");
    }
    Ok(LoadedModule {
        pre,
        update_methods,
        query_methods,
        exports,
        compile_instructions: wasm_instruction_count * cost::COST_TO_COMPILE_WASM_INSTRUCTION,
        fresh_instance_per_message: mutates_instance,
        native_stable,
        heap_marks,
        wasm64: memory64,
        enhanced_orthogonal_persistence: has_metadata(raw, ENHANCED_ORTHOGONAL_PERSISTENCE),
        wasm_hash: hash,
        raw: raw.into(),
        requested_counter,
        profile_names: profiled.then(|| FrameNames::of(raw)),
        stale_at_heap_traps: instrument::stale_at_heap_traps(counter, profiled),
    })
}

/// `module`, or its other variant, so that it has the profiling probes exactly when
/// `profiling` asks for a profile.
pub(super) fn variant(
    module: &Arc<LoadedModule>,
    profiling: Profiling,
) -> Result<Arc<LoadedModule>> {
    let profile = profiling != Profiling::Off;
    if module.profile_names.is_some() == profile {
        return Ok(module.clone());
    }
    load_variant(&module.raw, module.requested_counter, profile)
}

/// The replica's name for the metadata of enhanced orthogonal persistence (its upgrade
/// code's `ENHANCED_ORTHOGONAL_PERSISTENCE_SECTION`).
pub(crate) const ENHANCED_ORTHOGONAL_PERSISTENCE: &str = "enhanced-orthogonal-persistence";

/// Whether the module has the metadata `name`: a custom section `icp:public NAME` or
/// `icp:private NAME`, as the replica reads canister metadata.
pub(crate) fn has_metadata(wasm: &[u8], name: &str) -> bool {
    metadata(wasm, name).is_some()
}

/// The contents of the module's metadata `name` (see [`has_metadata`]), e.g. the
/// `candid:service` a canister's interface is typed by.
pub fn metadata<'a>(wasm: &'a [u8], name: &str) -> Option<&'a [u8]> {
    wasmparser::Parser::new(0)
        .parse_all(wasm)
        .map_while(|payload| payload.ok())
        .find_map(|payload| match payload {
            wasmparser::Payload::CustomSection(section) => {
                let n = section.name();
                (n.strip_prefix("icp:public ")
                    .or_else(|| n.strip_prefix("icp:private "))
                    == Some(name))
                .then(|| section.data())
            }
            _ => None,
        })
}

/// Checks that `wasm` (raw or gzipped) is a canister module this engine can run, without
/// compiling it; returns the raw module's export names. The error is one line naming the
/// problem: not Wasm, a Wasm version other than 1 (a component), truncated, or invalid
/// (with wasmparser's message and offset).
pub fn check_module(wasm: &[u8]) -> Result<Vec<String>> {
    let raw = decompress(wasm)?;
    if raw.len() < 8 {
        bail!(
            "truncated: {} bytes, shorter than a Wasm header (8 bytes)",
            raw.len()
        );
    }
    if raw[4..8] != [1, 0, 0, 0] {
        bail!(
            "not a Wasm core module of version 1 (a component or another format?): version bytes {:02x?}",
            &raw[4..8]
        );
    }
    // wasmparser's messages are one line apart from the magic and version ones, checked above.
    let one_line = |e: wasmparser::BinaryReaderError| {
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        let what = if e.offset() >= raw.len() || message.contains("unexpected end") {
            "truncated or invalid"
        } else {
            "invalid"
        };
        anyhow!("{what} Wasm: {message} (at byte offset {})", e.offset())
    };
    wasmparser::Validator::new_with_features(crate::instrument::FEATURES)
        .validate_all(&raw)
        .map_err(one_line)?;
    let mut exports = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(&raw) {
        if let wasmparser::Payload::ExportSection(section) = payload.map_err(one_line)? {
            for export in section {
                exports.push(export.map_err(one_line)?.name.to_string());
            }
        }
    }
    Ok(exports)
}

/// A module's bytes, gunzipped when gzipped; an error for bytes that are neither.
pub fn decompress(wasm: &[u8]) -> Result<Vec<u8>> {
    if wasm.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(wasm)
            .take(200 << 20)
            .read_to_end(&mut out)
            .context("invalid module: the gzip stream cannot be decompressed")?;
        return Ok(out);
    }
    if !wasm.starts_with(b"\0asm") {
        bail!(
            "invalid module: neither a Wasm module (\\0asm) nor gzip; the first bytes are {:02x?}",
            &wasm[..wasm.len().min(4)]
        );
    }
    Ok(wasm.to_vec())
}

/// What a profiling probe reads: the counter it was handed and the page charges so far.
fn reading(state: &HostState, counter: i64) -> Reading {
    Reading {
        counter,
        pages: state.page_charges(),
        folded: state.tracker.folded(),
        touched: state.pages_touched(),
    }
}
