//! Instruction metering: the same module transformation the IC replica applies before
//! compiling a canister, so that the instruction counts match the replica's exactly.
//!
//! Source: `dfinity/ic` `rs/embedders/src/wasm_utils/instrumentation.rs`
//! (`injections()`, `inject_metering()`, `export_additional_symbols()`), at commit
//! `002d5530aeb1ef1ed362d7f9c3c5529b8ec1cafe` and the newer wirm-based version; both split
//! basic blocks identically. Operator costs come from [`super::cost::instruction_cost`].
//!
//! What the output module contains, compared to the input:
//!
//! * a mutable i64 global exported as [`INSTRUCTION_COUNTER_EXPORT`]. The host sets it to
//!   the message's instruction limit before calling into the module and reads it back
//!   afterwards: instructions used = limit − counter. Its initial value is 0.
//! * a function import `(import "__" "out_of_instructions" (func))`, placed after all
//!   original imports, so its index is the number of original function imports. Every
//!   defined function moves up by one index; calls, `ref.func`, exports, element segments,
//!   global/table initialisers and the `name` section are remapped accordingly.
//! * an unmetered helper `(func (param i64) (result i64))`, the last defined function, that
//!   subtracts its argument from the counter (saturating at `i64::MIN`), calls
//!   `out_of_instructions` if the counter is then negative, and returns its argument. It
//!   charges the size operand of `memory.fill/copy/init` and `table.fill/copy/init`.
//! * per function body, a counter decrement at the start of every metered segment, and an
//!   out-of-instructions check at function entry and at every loop header. Where the body
//!   keeps the counter meanwhile is [`Counter`]: the replica's code reads and writes the
//!   global in every segment; the default keeps it in a local (see [`Counter::Local`]),
//!   which gives the same counts several times faster in tight loops.
//! * an i32 global exported as [`OUT_OF_INSTRUCTIONS_FLAG_EXPORT`], set to 1 right before a
//!   check traps with `unreachable` (the local counter's checks do that instead of calling
//!   the import, because a call in a loop makes Cranelift spill the loop's registers).
//! * the `start` section is removed and its function exported as [`CANISTER_START_EXPORT`]
//!   instead, as the replica does: a start function would otherwise run during
//!   instantiation, before the host could set the counter (initially 0), and trap. The host
//!   calls `canister_start` (if exported) with the counter set, before `canister_init`.
//!
//! Everything else (custom sections such as `icp:public candid:service`, data segments,
//! tables, memories) is copied through unchanged.
//!
//! Not reproduced (none of it changes an instruction count of the metered code): the
//! replica's `try_grow_wasm_memory` glue after `memory.grow`, its Wasm-native stable memory
//! (the `ic0.stable*` replacements, bytemap memory and page counters), the renaming of the
//! memory/table exports and the `__persistent_mutable_global_*` exports.

use std::convert::Infallible;
use std::fmt;
use std::ops::Range;

use wasm_encoder::reencode::{utils, Reencode};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, Encode, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, ImportSection, Instruction, NameMap, NameSection,
    RawSection, SectionId, TypeSection, ValType,
};
use wasmparser::{
    FuncValidatorAllocations, FunctionBody, KnownCustom, Name, NameSectionReader, Operator, Parser,
    Payload, TypeRef, ValidPayload, Validator, WasmFeatures,
};

use super::cost::{instruction_cost, is_scalar_load_or_store, system_api_fee, ApiFee};

/// Export name of the injected instruction counter global.
pub const INSTRUCTION_COUNTER_EXPORT: &str = "canister counter_instructions";
/// Export name under which the module's start function is exposed.
pub const CANISTER_START_EXPORT: &str = "canister_start";
/// Prefix of the exports that expose the module's mutable globals (the replica's name).
pub const PERSISTENT_GLOBAL_PREFIX: &str = "__persistent_mutable_global_";
/// Import module of the injected host function.
pub const SYSTEM_MODULE: &str = "__";
/// Import name of the host function called when the counter drops below zero at a check.
pub const OUT_OF_INSTRUCTIONS_IMPORT: &str = "out_of_instructions";
/// Export name of the injected i32 global that is 1 when an `unreachable` trap was a failed
/// instruction check (out of instructions), not the module's own `unreachable`.
pub const OUT_OF_INSTRUCTIONS_FLAG_EXPORT: &str = "canister out_of_instructions";
/// Import name of the profiling probe a profiled module calls when a function starts or a
/// System API function is called: `(param $func i32 $counter i64)`, where `$func` is the
/// function's index in the input module.
pub const PROFILE_ENTER_IMPORT: &str = "profile_enter";
/// Import name of the profiling probe called when a function returns:
/// `(param $counter i64)`.
pub const PROFILE_EXIT_IMPORT: &str = "profile_exit";

/// Exports the input module must not define (the replica's `RESERVED_SYMBOLS` that we
/// inject).
const RESERVED_EXPORTS: [&str; 3] = [
    INSTRUCTION_COUNTER_EXPORT,
    CANISTER_START_EXPORT,
    OUT_OF_INSTRUCTIONS_FLAG_EXPORT,
];
/// Prefix of the exports only icbench's instrumentation adds. The replica accepts a module
/// that exports such a name, so icbench does too: such a module gets no native stable
/// accesses (its exports stay its own).
pub const ICBENCH_EXPORT_PREFIX: &str = "__icbench ";

/// Native stable accesses. A StableBTreeMap makes about 178 `ic0.stable64_read`/`write`
/// calls per row inserted, and a host call costs several times what the copy does. Where the
/// module allows it (see [`Instrumented::native_stable`]), calls to `stable64_read` and
/// `stable64_write` go to injected functions instead, which copy between the heap and
/// [`STABLE_CACHE_EXPORT`] when every 4 KiB page of the range is cached (a write: cached
/// and written by the host in this message), and call the host's function otherwise.
///
/// The host counts its accesses to each page in [`STABLE_MARKS_EXPORT`] and, at a page's
/// [`MARK_SEEN`]th access in a message, puts the page's bytes in the cache; it keeps cached
/// bytes equal to stable memory's, copies natively written pages back before it touches
/// them and when the message ends, and clears the marks when the next message starts. So a
/// native access touches only stable pages that the message already accessed (or wrote)
/// through the host: no limit, memory tracker charge or error can arise from it, and it
/// charges the host function's own fee. Everything else is the host's, as before: the first
/// accesses to a page, a first write, a range past the cache, out of bounds (stable memory
/// or heap), longer than [`NATIVE_ACCESS_MAX`] or without the instructions for its fee.
///
/// The one difference a canister could see is when a trap happens, not whether: a native
/// access does not fold the memory tracker's pending page charges into the counter, so a
/// message those charges ran out of instructions stops at its next host call or its end
/// (see docs/engine.md, *In-band*).
///
/// Stable memory as a cache of the host's pages (fixed size, readable and writable).
pub const STABLE_CACHE_EXPORT: &str = "__icbench stable cache";
/// One byte per 4 KiB page of the cache: nonzero = marked (its cached bytes are current).
pub const STABLE_MARKS_EXPORT: &str = "__icbench stable marks";
/// An i64 global: the stable memory's size in bytes, at most [`STABLE_CACHE_BYTES`].
pub const STABLE_BYTES_EXPORT: &str = "__icbench stable bytes";
/// How much stable memory the cache covers: 8 GiB, a 10,000,000-row StableBTreeMap's
/// several times over. Pages past it are always accessed through the host.
pub const STABLE_CACHE_BYTES: u64 = 8 << 30;
/// The longest access an injected function answers (its fee cannot overflow).
const NATIVE_ACCESS_MAX: u64 = 65536;

/// Where the instrumented code keeps the instruction counter while a function runs. Both
/// charge the same amounts at the same points, so the counter holds the same value whenever
/// the host or a trap can observe it: at every System API call, every trap and every return
/// to the host. Tests run both and compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Counter {
    /// The replica's own code: every segment reads, decrements and writes the exported
    /// global, and a check calls `out_of_instructions`. Each decrement waits for the previous
    /// one through memory, which makes tight loops about twice as slow as unmetered code.
    Global,
    /// The counter lives in a local of each function and is passed to callees as an extra
    /// last parameter and returned as an extra last result (exports get an unmetered wrapper
    /// with the original signature that moves it from and to the global). The global is
    /// written only where it can be observed: before every operator that can trap or grow
    /// memory, before System API calls (which take the counter as an extra last argument and
    /// return it charged as an extra last result, so the host need not touch the global), before
    /// bulk-operation charges, but not before plain loads and stores: their only trap, out
    /// of bounds, leaves the global behind ([`stale_at_heap_traps`]), and the engine counts
    /// such a message again with [`Counter::Global`]. A failed check sets the flag global
    /// and traps. Defined
    /// functions take their `i32` parameters past the fourth integer one as `i64`
    /// ([`call_params`]), which Cranelift passes without a store-forwarding stall.
    ///
    /// Modules that put imported functions into tables or re-export them fall back to
    /// [`Counter::Global`] (an import's signature cannot take the extra parameter).
    #[default]
    Local,
}

/// Operators in the helper that charges bulk operations (19 + the final `end`); the replica's
/// helper has the same body, so its count enters the compile cost identically.
const DECREMENT_HELPER_OPS: u64 = 20;
/// Operators of the replica's `count_clean_pages` helper (45 + `end`), which the replica adds
/// for its Wasm-native stable memory. We don't generate it but it is part of the replica's
/// compile-cost instruction count (wirm-based `instrumentation.rs`).
const REPLICA_COUNT_CLEAN_PAGES_OPS: u64 = 46;
/// The replica injects three globals (instructions, dirty pages, accessed pages).
const REPLICA_INJECTED_GLOBALS: u64 = 3;
/// The replica rewrites each `memory.grow` into `local.tee; memory.grow; local.get; call`.
const REPLICA_OPS_PER_MEMORY_GROW: u64 = 3;

/// The Wasm features a canister module may use: those the replica enables in
/// `wasmtime_validation_config` (`rs/embedders/src/wasm_utils/validation.rs`, newest version
/// seen, wasmtime 45): the Wasm 2.0 set (bulk memory, reference types, multi-value, SIMD,
/// sign extension, saturating float-to-int, mutable globals) plus memory64 and tail calls.
/// Disabled: threads/shared memory, multi-memory (the replica enables it only for its own
/// stable-memory memories), relaxed SIMD, extended-const, function references, GC,
/// exceptions, custom page sizes, wide arithmetic, stack switching, component model.
pub const FEATURES: WasmFeatures = WasmFeatures::WASM2
    .union(WasmFeatures::MEMORY64)
    .union(WasmFeatures::TAIL_CALL);

/// The features of an instrumented module: the input's plus multi-memory, for the memories
/// of the native stable accesses (as the replica adds its own).
pub const OUTPUT_FEATURES: WasmFeatures = FEATURES.union(WasmFeatures::MULTI_MEMORY);

/// An instrumented module.
#[derive(Clone, Debug)]
pub struct Instrumented {
    /// The instrumented module.
    pub wasm: Vec<u8>,
    /// Functions defined (not imported) by the input module.
    pub function_count: usize,
    /// The instruction count the replica multiplies by
    /// [`super::cost::COST_TO_COMPILE_WASM_INSTRUCTION`] at install: every operator (each
    /// body's final `end` included) of every function body *after* instrumentation, plus 2 per
    /// global. It includes the replica-only additions we can count exactly (its
    /// `count_clean_pages` helper, 3 extra operators per `memory.grow`, its 2 extra globals)
    /// but not the bodies the replica generates for imported `ic0.stable*` functions.
    pub wasm_instruction_count: u64,
    /// Whether the module's memory is a 64-bit memory (loads/stores cost 2, cycles ×2).
    pub memory64: bool,
    /// Where the code keeps the counter (the requested placement, unless the module forced
    /// the fallback to [`Counter::Global`]).
    pub counter: Counter,
    /// Whether the code can change instance state that the replica does not persist: table
    /// contents and sizes, dropped element and data segments. The replica instantiates the
    /// module afresh for every message, so such changes last one message only.
    pub mutates_instance: bool,
    /// Whether calls to `ic0.stable64_read` and `stable64_write` go to the injected
    /// functions of the native stable accesses (see [`STABLE_CACHE_EXPORT`]): a module with
    /// the local counter, unprofiled, with a memory of its own, that imports them with
    /// their System API type.
    pub native_stable: bool,
}

/// Why a module could not be instrumented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstrumentError {
    /// Not a valid Wasm module (wasmparser's message and byte offset).
    InvalidModule { message: String, offset: usize },
    /// A valid module that uses a Wasm feature the IC does not enable (threads/shared memory,
    /// multi-memory, relaxed SIMD, ...). wasmparser's message and byte offset.
    UnsupportedFeature { message: String, offset: usize },
    /// The module already exports a name the instrumentation injects.
    ReservedExport { name: String },
    /// Profiling was asked for a module whose types it cannot extend (a non-function type).
    NotProfilable { reason: String },
    /// An active data segment of memory 0 does not fit into the initial memory (the
    /// replica's `InvalidDataSegment`, checked at instrumentation, before anything runs).
    InvalidDataSegment { offset: u64, len: u64 },
    /// A mutable global holds a reference (`funcref`/`externref`). The replica saves every
    /// mutable global after each message and fails the message with "Unexpected global
    /// value type" for these, so no message of such a canister can succeed.
    MutableReferenceGlobal { index: u32 },
}

impl fmt::Display for InstrumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstrumentError::InvalidModule { message, offset } => {
                write!(f, "invalid Wasm module: {message} (at offset {offset:#x})")
            }
            InstrumentError::UnsupportedFeature { message, offset } => write!(
                f,
                "Wasm feature not supported on the IC: {message} (at offset {offset:#x})"
            ),
            InstrumentError::ReservedExport { name } => {
                write!(f, "the module exports the reserved name {name:?}")
            }
            InstrumentError::NotProfilable { reason } => {
                write!(f, "the module cannot be profiled: {reason}")
            }
            // The replica's wording (`WasmInstrumentationError::InvalidDataSegment`).
            InstrumentError::InvalidDataSegment { offset, len } => {
                write!(
                    f,
                    "Wasm module has invalid data segment of {len} bytes at {offset}"
                )
            }
            InstrumentError::MutableReferenceGlobal { index } => write!(
                f,
                "mutable global {index} holds a reference (funcref/externref): the IC saves mutable \
                 globals after every message and fails each message of such a canister with \
                 \"Unexpected global value type\""
            ),
        }
    }
}

impl std::error::Error for InstrumentError {}

fn invalid(e: wasmparser::BinaryReaderError) -> InstrumentError {
    InstrumentError::InvalidModule {
        message: e.message().to_string(),
        offset: e.offset(),
    }
}

fn reencode_error(e: wasm_encoder::reencode::Error<Infallible>) -> InstrumentError {
    match e {
        wasm_encoder::reencode::Error::ParseError(e) => invalid(e),
        other => InstrumentError::InvalidModule {
            message: other.to_string(),
            offset: 0,
        },
    }
}

/// Instruments `wasm` for instruction metering, with the replica's counts, keeping the
/// counter in locals where the module allows it ([`Counter::Local`]).
pub fn instrument(wasm: &[u8]) -> Result<Instrumented, InstrumentError> {
    instrument_with(wasm, Counter::Local)
}

/// Instruments `wasm` with the counter placement `counter` (or [`Counter::Global`] when the
/// module cannot use the local one).
pub fn instrument_with(wasm: &[u8], counter: Counter) -> Result<Instrumented, InstrumentError> {
    instrument_options(wasm, counter, false)
}

/// [`instrument_with`] plus the profiling probes: the module calls
/// [`PROFILE_ENTER_IMPORT`] at the start of every function (with its index in the input
/// module) and before every System API call (with the import's index), and
/// [`PROFILE_EXIT_IMPORT`] wherever a function returns and after every System API call, each
/// with the instruction counter. The probes are not metered: the counter, every charge and
/// the compilation cost are those of the unprofiled module, and the probes read the counter
/// exactly where the metering left it.
pub fn instrument_profiled(wasm: &[u8], counter: Counter) -> Result<Instrumented, InstrumentError> {
    instrument_options(wasm, counter, true)
}

fn instrument_options(
    wasm: &[u8],
    counter: Counter,
    profile: bool,
) -> Result<Instrumented, InstrumentError> {
    let info = validate_and_scan(wasm)?;
    let counter = match counter {
        Counter::Local if info.local_counter_blocked => Counter::Global,
        other => other,
    };
    if profile && info.types.iter().any(Option::is_none) {
        return Err(InstrumentError::NotProfilable {
            reason: "it declares a type that is not a function type".into(),
        });
    }
    let native = (counter == Counter::Local
        && !profile
        && !info.memory_imported
        && !info.icbench_prefix_exported
        && info.memories64.len() == 1)
        .then(|| NativeStable {
            read: native_access(&info, info.stable64_read, "stable64_read"),
            write: native_access(&info, info.stable64_write, "stable64_write"),
        })
        .filter(|n| n.read.is_some() || n.write.is_some());
    let mut emitter = Emitter::new(wasm, &info, counter, profile, native);
    emitter.run()?;
    let wasm_instruction_count = emitter.op_count
        + DECREMENT_HELPER_OPS
        + REPLICA_COUNT_CLEAN_PAGES_OPS
        + REPLICA_OPS_PER_MEMORY_GROW * emitter.memory_grow_count
        + 2 * (info.num_globals as u64 + REPLICA_INJECTED_GLOBALS);
    Ok(Instrumented {
        wasm: emitter.module.finish(),
        function_count: info.num_defined_funcs as usize,
        wasm_instruction_count,
        memory64: info.mem64,
        counter,
        mutates_instance: emitter.mutates_instance,
        native_stable: native.is_some(),
    })
}

// -------------------------------------------------------------------------------------------
// Native stable accesses (see STABLE_CACHE_EXPORT)
// -------------------------------------------------------------------------------------------

/// The System API imports whose calls injected functions take over.
#[derive(Clone, Copy, Debug)]
struct NativeStable {
    read: Option<Access>,
    write: Option<Access>,
}

/// An import taken over: its function and type index, and the fee it charges.
#[derive(Clone, Copy, Debug)]
struct Access {
    import: u32,
    ty: u32,
    fee: ApiFee,
}

fn native_access(info: &ModuleInfo, import: Option<(u32, u32)>, name: &str) -> Option<Access> {
    let (import, ty) = import?;
    let system_api_type = info.types[ty as usize]
        .as_ref()
        .is_some_and(|t| t.params == [ValType::I64; 3] && t.results.is_empty());
    system_api_type.then_some(Access {
        import,
        ty,
        fee: system_api_fee(name)?,
    })
}

/// Memory indices of the cache and the marks: after the module's only memory.
const CACHE_MEMORY: u32 = 1;
const MARKS_MEMORY: u32 = 2;
/// A page's mark below [`MARK_CACHED`]: how many times the host accessed it in this
/// message. It is cached at the access after the `MARK_SEEN`th: filling a cache page costs a page fault and
/// a copy, about what 40 host calls do, and many pages are touched only a few times (SQLite
/// reading its file after opening it), while a StableBTreeMap's upper nodes are read
/// thousands of times in one message.
pub const MARK_SEEN: i32 = 16;
/// A page's mark: its cached bytes are current, and a read may use them.
pub const MARK_CACHED: i32 = 0x40;
/// A page's mark: cached and written in this message (a write may go to the cache, which
/// then holds the page's current bytes until the host writes them back).
pub const MARK_WRITTEN: i32 = 0x41;

fn add_native_stable_memories(memories: &mut wasm_encoder::MemorySection) {
    let cache_pages = STABLE_CACHE_BYTES / WASM_PAGE;
    let marks_pages = STABLE_CACHE_BYTES / 4096 / WASM_PAGE;
    memories.memory(wasm_encoder::MemoryType {
        minimum: cache_pages,
        maximum: Some(cache_pages),
        memory64: true,
        shared: false,
        page_size_log2: None,
    });
    memories.memory(wasm_encoder::MemoryType {
        minimum: marks_pages,
        maximum: Some(marks_pages),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
}

/// `stable64_read`: `(func (param $dst i64) (param $offset i64) (param $size i64) (param
/// $counter i64) (result i64))`, `stable64_write` the same with `$offset` and `$src` first:
/// answers the access from the cache when it can (see [`STABLE_CACHE_EXPORT`]; a write
/// needs every page marked written) and returns the counter charged with the host
/// function's fee, or calls the import with the same arguments and returns what it
/// returns. `heap64`: memory 0 is 64-bit.
fn native_access_function(
    native: Access,
    write: bool,
    heap64: bool,
    stable_bytes: u32,
) -> Function {
    let (dst, offset, size, counter) = if write { (1, 0, 2, 3) } else { (0, 1, 2, 3) };
    let (end, page, last, fee) = (4, 5, 6, 7);
    let needed_mark = if write { MARK_WRITTEN } else { MARK_CACHED };
    let mut f = Function::new([(4, ValType::I64)]);
    let marks = wasm_encoder::MemArg {
        offset: 0,
        align: 0,
        memory_index: MARKS_MEMORY,
    };
    let mut sink = f.instructions();
    sink.block(BlockType::Empty)
        // 1 <= size <= NATIVE_ACCESS_MAX
        .local_get(size)
        .i64_eqz()
        .br_if(0)
        .local_get(size)
        .i64_const(NATIVE_ACCESS_MAX as i64)
        .i64_gt_u()
        .br_if(0)
        // The fee, and enough instructions left for it (the host's `charge`).
        .i64_const(native.fee.base as i64)
        .local_get(size)
        .i64_const(native.fee.per_byte as i64)
        .i64_mul()
        .i64_add()
        .local_tee(fee)
        .local_get(counter)
        .i64_gt_s()
        .br_if(0)
        // end = offset + size, without overflow, within the stable memory (and the cache).
        .local_get(offset)
        .local_get(size)
        .i64_add()
        .local_tee(end)
        .local_get(offset)
        .i64_lt_u()
        .br_if(0)
        .local_get(end)
        .global_get(stable_bytes)
        .i64_gt_u()
        .br_if(0)
        // dst + size, without overflow, within the heap.
        .local_get(dst)
        .local_get(size)
        .i64_add()
        .local_get(dst)
        .i64_lt_u()
        .br_if(0)
        .local_get(dst)
        .local_get(size)
        .i64_add()
        .memory_size(0);
    if !heap64 {
        sink.i64_extend_i32_u();
    }
    sink.i64_const(16)
        .i64_shl()
        .i64_gt_u()
        .br_if(0)
        // Every page of the range marked.
        .local_get(offset)
        .i64_const(12)
        .i64_shr_u()
        .local_set(page)
        .local_get(end)
        .i64_const(1)
        .i64_sub()
        .i64_const(12)
        .i64_shr_u()
        .local_set(last)
        .loop_(BlockType::Empty)
        .local_get(page)
        .i32_wrap_i64()
        .i32_load8_u(marks)
        .i32_const(needed_mark)
        .i32_lt_u()
        .br_if(1)
        .local_get(page)
        .i64_const(1)
        .i64_add()
        .local_tee(page)
        .local_get(last)
        .i64_le_u()
        .br_if(0)
        .end();
    // The copy: destination, source and length (in the narrower address type).
    let heap_address = |sink: &mut wasm_encoder::InstructionSink<'_>| {
        sink.local_get(dst);
        if !heap64 {
            sink.i32_wrap_i64();
        }
    };
    let (to, from) = if write {
        (CACHE_MEMORY, 0)
    } else {
        (0, CACHE_MEMORY)
    };
    let addresses = |sink: &mut wasm_encoder::InstructionSink<'_>| {
        if write {
            sink.local_get(offset);
            heap_address(sink);
        } else {
            heap_address(sink);
            sink.local_get(offset);
        }
    };
    // 4 and 8 bytes (a StableBTreeMap's lengths, addresses and u64 keys) as one load and
    // store: `memory.copy` is a call out of the compiled code.
    let arg = |memory_index| wasm_encoder::MemArg {
        offset: 0,
        align: 0,
        memory_index,
    };
    for (bytes, wide) in [(8, true), (4, false)] {
        sink.local_get(size)
            .i64_const(bytes)
            .i64_eq()
            .if_(BlockType::Empty);
        addresses(&mut sink);
        if wide {
            sink.i64_load(arg(from)).i64_store(arg(to));
        } else {
            sink.i32_load(arg(from)).i32_store(arg(to));
        }
        sink.local_get(counter)
            .local_get(fee)
            .i64_sub()
            .return_()
            .end();
    }
    addresses(&mut sink);
    sink.local_get(size);
    if !heap64 {
        sink.i32_wrap_i64();
    }
    sink.memory_copy(to, from)
        .local_get(counter)
        .local_get(fee)
        .i64_sub()
        .return_()
        .end()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .local_get(counter)
        .call(native.import)
        .end();
    f
}

// -------------------------------------------------------------------------------------------
// Pass 1: validation and the facts the rewrite needs
// -------------------------------------------------------------------------------------------

#[derive(Default)]
struct ModuleInfo {
    num_types: u32,
    num_func_imports: u32,
    num_defined_funcs: u32,
    num_globals: u32,
    /// Index type of every memory / table (imports first), true = 64-bit.
    memories64: Vec<bool>,
    tables64: Vec<bool>,
    /// Whether memory 0 is a 64-bit memory (the replica's "main memory type").
    mem64: bool,
    start: Option<u32>,
    /// Indices of the module's own mutable globals: exported so the host can save and
    /// restore them around messages (a trap rolls them back), as the replica does.
    mutable_globals: Vec<u32>,
    /// Whether memory 0 is already exported, and every export name (to pick a free one).
    memory_exported: bool,
    export_names: Vec<String>,
    /// Every type, `None` for a non-function type (none pass validation with our features).
    types: Vec<Option<Signature>>,
    /// Type index of every defined function.
    func_types: Vec<u32>,
    /// Defined functions that the host calls (exported, or the start function), in order of
    /// first appearance: each gets a wrapper with [`Counter::Local`].
    entry_funcs: Vec<u32>,
    /// Initial size of memory 0 in bytes.
    initial_bytes: u64,
    /// The module references an imported function from a table, a `ref.func` initialiser or
    /// an export, so that [`Counter::Local`] cannot be used.
    local_counter_blocked: bool,
    /// The imports `ic0.stable64_read` and `stable64_write`: function and type index.
    stable64_read: Option<(u32, u32)>,
    stable64_write: Option<(u32, u32)>,
    /// Memory 0 is imported, not defined.
    memory_imported: bool,
    /// The module exports a name with [`ICBENCH_EXPORT_PREFIX`].
    icbench_prefix_exported: bool,
}

/// A function type in the encoder's terms.
struct Signature {
    params: Vec<ValType>,
    results: Vec<ValType>,
}

impl Signature {
    fn of(ty: &wasmparser::FuncType) -> Option<Signature> {
        let convert = |vals: &[wasmparser::ValType]| -> Option<Vec<ValType>> {
            vals.iter()
                .map(|&v| wasm_encoder::reencode::RoundtripReencoder.val_type(v).ok())
                .collect()
        };
        Some(Signature {
            params: convert(ty.params())?,
            results: convert(ty.results())?,
        })
    }
}

impl ModuleInfo {
    fn note_entry(&mut self, func: u32) {
        if func < self.num_func_imports {
            self.local_counter_blocked = true;
        } else if !self.entry_funcs.contains(&func) {
            self.entry_funcs.push(func);
        }
    }

    /// Blocks the local counter if a constant expression takes the reference of an import.
    fn scan_const_expr(&mut self, expr: &wasmparser::ConstExpr<'_>) -> Result<(), InstrumentError> {
        let mut reader = expr.get_operators_reader();
        while !reader.eof() {
            if let Operator::RefFunc { function_index } = reader.read().map_err(invalid)? {
                if function_index < self.num_func_imports {
                    self.local_counter_blocked = true;
                }
            }
        }
        Ok(())
    }
}

const WASM_PAGE: u64 = 65536;

/// The replica applies active data segments of memory 0 itself and refuses the module if
/// one with a constant offset ends past the initial memory.
fn check_data_segment(
    info: &ModuleInfo,
    data: &wasmparser::Data<'_>,
) -> Result<(), InstrumentError> {
    let wasmparser::DataKind::Active {
        memory_index: 0,
        offset_expr,
    } = &data.kind
    else {
        return Ok(());
    };
    let offset = match offset_expr.get_operators_reader().read().map_err(invalid)? {
        Operator::I32Const { value } => value as u32 as u64,
        Operator::I64Const { value } => value as u64,
        _ => return Ok(()),
    };
    let len = data.data.len() as u64;
    match offset.checked_add(len) {
        Some(end) if end <= info.initial_bytes => Ok(()),
        _ => Err(InstrumentError::InvalidDataSegment { offset, len }),
    }
}

fn validate_and_scan(wasm: &[u8]) -> Result<ModuleInfo, InstrumentError> {
    let classify = |e: wasmparser::BinaryReaderError| {
        // A module that validates with every feature on only fails for lack of a feature.
        if Validator::new_with_features(WasmFeatures::all())
            .validate_all(wasm)
            .is_ok()
        {
            InstrumentError::UnsupportedFeature {
                message: e.message().to_string(),
                offset: e.offset(),
            }
        } else {
            invalid(e)
        }
    };

    let mut validator = Validator::new_with_features(FEATURES);
    let mut allocs = FuncValidatorAllocations::default();
    let mut info = ModuleInfo::default();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(classify)?;
        if let ValidPayload::Func(func, body) = validator.payload(&payload).map_err(classify)? {
            let mut func = func.into_validator(std::mem::take(&mut allocs));
            func.validate(&body).map_err(classify)?;
            allocs = func.into_allocations();
        }
        match payload {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group.map_err(invalid)?.types() {
                        info.num_types += 1;
                        info.types.push(match &ty.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(f) => Signature::of(f),
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(invalid)?;
                    match import.ty {
                        TypeRef::Func(ty) | TypeRef::FuncExact(ty) => {
                            match (import.module, import.name) {
                                ("ic0", "stable64_read") => {
                                    info.stable64_read = Some((info.num_func_imports, ty))
                                }
                                ("ic0", "stable64_write") => {
                                    info.stable64_write = Some((info.num_func_imports, ty))
                                }
                                _ => {}
                            }
                            info.num_func_imports += 1
                        }
                        TypeRef::Table(t) => info.tables64.push(t.table64),
                        TypeRef::Memory(m) => {
                            info.memory_imported = true;
                            info.memories64.push(m.memory64)
                        }
                        TypeRef::Global(_) => info.num_globals += 1,
                        TypeRef::Tag(_) => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                info.num_defined_funcs = reader.count();
                for ty in reader {
                    info.func_types.push(ty.map_err(invalid)?);
                }
            }
            Payload::TableSection(reader) => {
                for table in reader {
                    let table = table.map_err(invalid)?;
                    info.tables64.push(table.ty.table64);
                    if let wasmparser::TableInit::Expr(expr) = &table.init {
                        info.scan_const_expr(expr)?;
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let memory = memory.map_err(invalid)?;
                    if info.memories64.is_empty() {
                        info.initial_bytes = memory.initial.saturating_mul(WASM_PAGE);
                    }
                    info.memories64.push(memory.memory64);
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(invalid)?;
                    check_data_segment(&info, &data)?;
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let global = global.map_err(invalid)?;
                    if global.ty.mutable {
                        if global.ty.content_type.is_reference_type() {
                            return Err(InstrumentError::MutableReferenceGlobal {
                                index: info.num_globals,
                            });
                        }
                        info.mutable_globals.push(info.num_globals);
                    }
                    info.scan_const_expr(&global.init_expr)?;
                    info.num_globals += 1;
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(invalid)?;
                    info.export_names.push(export.name.to_string());
                    if export.kind == wasmparser::ExternalKind::Memory && export.index == 0 {
                        info.memory_exported = true;
                    }
                    if matches!(
                        export.kind,
                        wasmparser::ExternalKind::Func | wasmparser::ExternalKind::FuncExact
                    ) {
                        info.note_entry(export.index);
                    }
                    if export.name.starts_with(ICBENCH_EXPORT_PREFIX) {
                        info.icbench_prefix_exported = true;
                    }
                    if RESERVED_EXPORTS.contains(&export.name)
                        || export.name.starts_with(PERSISTENT_GLOBAL_PREFIX)
                    {
                        return Err(InstrumentError::ReservedExport {
                            name: export.name.to_string(),
                        });
                    }
                }
            }
            Payload::StartSection { func, .. } => {
                info.start = Some(func);
                info.note_entry(func);
            }
            Payload::ElementSection(reader) => {
                for element in reader {
                    match element.map_err(invalid)?.items {
                        wasmparser::ElementItems::Functions(funcs) => {
                            for func in funcs {
                                if func.map_err(invalid)? < info.num_func_imports {
                                    info.local_counter_blocked = true;
                                }
                            }
                        }
                        wasmparser::ElementItems::Expressions(_, exprs) => {
                            for expr in exprs {
                                info.scan_const_expr(&expr.map_err(invalid)?)?;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    info.mem64 = info.memories64.first().copied().unwrap_or(false);
    if info.types.iter().any(Option::is_none) {
        info.local_counter_blocked = true;
    }
    Ok(info)
}

// -------------------------------------------------------------------------------------------
// Pass 2: the rewrite
// -------------------------------------------------------------------------------------------

/// Re-encoder that moves defined functions up past the injected imports, which come after
/// the original function imports.
struct Shift {
    num_func_imports: u32,
    /// Imports injected after the original ones: `out_of_instructions`, and the two
    /// profiling probes when profiling.
    injected: u32,
}

impl Shift {
    fn func(&self, index: u32) -> u32 {
        if index >= self.num_func_imports {
            index + self.injected
        } else {
            index
        }
    }
}

impl Reencode for Shift {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, wasm_encoder::reencode::Error> {
        Ok(self.func(func))
    }
}

/// [`Counter::Local`]: re-encodes the import section with every function import's type
/// `t` replaced by `t` with the counter added (`local_types + t`), so that System API calls
/// take the counter as an extra last argument and hand it back as an extra last result:
/// the host reads and writes a plain value instead of the counter global. Other imports
/// have no type index (the enabled features have no tags or typed references).
struct CountedImports {
    local_types: u32,
}

impl Reencode for CountedImports {
    type Error = Infallible;

    fn type_index(&mut self, ty: u32) -> Result<u32, wasm_encoder::reencode::Error> {
        Ok(self.local_types + ty)
    }
}

/// The type of the size operand of a bulk operation, `None` for other operators.
fn bulk_size_operand(info: &ModuleInfo, op: &Operator) -> Option<SizeOperand> {
    let size = |is64: bool| {
        if is64 {
            SizeOperand::I64
        } else {
            SizeOperand::I32
        }
    };
    let mem = |i: u32| info.memories64.get(i as usize).copied().unwrap_or(false);
    let table = |i: u32| info.tables64.get(i as usize).copied().unwrap_or(false);
    // The replica decides by the main memory's type for fill/copy of memories *and*
    // tables; we use the operand's real type, which is the same except for a 32-bit table
    // in a wasm64 module (where the replica's output would not validate).
    match *op {
        Operator::MemoryFill { mem: m } => Some(size(mem(m))),
        Operator::MemoryCopy { dst_mem, src_mem } => Some(size(mem(dst_mem) && mem(src_mem))),
        Operator::TableFill { table: t } => Some(size(table(t))),
        Operator::TableCopy {
            dst_table,
            src_table,
        } => Some(size(table(dst_table) && table(src_table))),
        // The length operand of `memory.init` and `table.init` is always an i32.
        Operator::MemoryInit { .. } | Operator::TableInit { .. } => Some(SizeOperand::I32),
        _ => None,
    }
}

/// Where a metered segment starts (`Scope` in the replica).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scope {
    /// Function entry and loop bodies: charged and checked.
    Reentrant,
    /// After `if` (then-arm) and after any block end/branch: charged, never checked, and
    /// skipped when the cost is 0.
    NonReentrant,
}

/// Type of the size operand a bulk operation leaves on top of the stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SizeOperand {
    I32,
    I64,
}

#[derive(Clone, Copy, Debug)]
enum Injection {
    Static { scope: Scope, cost: u64 },
    Dynamic(SizeOperand),
}

#[derive(Clone, Copy, Debug)]
struct Point {
    /// Index of the operator the injection goes in front of.
    position: usize,
    injection: Injection,
}

/// The non-custom sections we add something to, in module order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Synth {
    Type,
    Import,
    Function,
    Global,
    Export,
    Code,
}

const SYNTHS: [Synth; 6] = [
    Synth::Type,
    Synth::Import,
    Synth::Function,
    Synth::Global,
    Synth::Export,
    Synth::Code,
];

/// Position of a section in the binary module order (custom sections excluded).
fn rank(id: SectionId) -> u8 {
    match id {
        SectionId::Type => 1,
        SectionId::Import => 2,
        SectionId::Function => 3,
        SectionId::Table => 4,
        SectionId::Memory => 5,
        SectionId::Tag => 6,
        SectionId::Global => 7,
        SectionId::Export => 8,
        SectionId::Start => 9,
        SectionId::Element => 10,
        SectionId::DataCount => 11,
        SectionId::Code => 12,
        SectionId::Data => 13,
        SectionId::Custom => 0,
    }
}

const RANK_END: u8 = u8::MAX;

impl Synth {
    fn id(self) -> SectionId {
        match self {
            Synth::Type => SectionId::Type,
            Synth::Import => SectionId::Import,
            Synth::Function => SectionId::Function,
            Synth::Global => SectionId::Global,
            Synth::Export => SectionId::Export,
            Synth::Code => SectionId::Code,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

fn sink(out: &mut Vec<u8>) -> wasm_encoder::InstructionSink<'_> {
    wasm_encoder::InstructionSink::new(out)
}

/// Where a profiling probe reads the counter from.
#[derive(Clone, Copy)]
enum CounterIn {
    Local(u32),
    Global(u32),
}

impl CounterIn {
    fn push<'s, 'o>(
        self,
        s: &'s mut wasm_encoder::InstructionSink<'o>,
    ) -> &'s mut wasm_encoder::InstructionSink<'o> {
        match self {
            CounterIn::Local(l) => s.local_get(l),
            CounterIn::Global(g) => s.global_get(g),
        }
    }
}

/// Operators the replica's injection adds for `injection`: they count towards the install's
/// compilation charge whatever code we generate ourselves.
fn replica_injected_ops(injection: Injection) -> u64 {
    match injection {
        Injection::Static {
            scope: Scope::NonReentrant,
            cost: 0,
        } => 0,
        Injection::Static {
            scope: Scope::NonReentrant,
            ..
        } => 4,
        Injection::Static {
            scope: Scope::Reentrant,
            ..
        } => 10,
        Injection::Dynamic(SizeOperand::I64) => 1,
        Injection::Dynamic(SizeOperand::I32) => 3,
    }
}

/// Whether the global counter can be behind at a trap: with the local counter and without
/// the profiling probes, loads and stores ([`is_scalar_load_or_store`]) do not write the
/// counter back first. Their one trap, `MemoryOutOfBounds`, is rare and ends the message, and writing the
/// global before every segment that touches memory cost about 5% of the StableBTreeMap
/// fill's time; so the engine instead runs such a message again on the module with
/// [`Counter::Global`], whose count at every trap is the replica's.
pub fn stale_at_heap_traps(counter: Counter, profiled: bool) -> bool {
    counter == Counter::Local && !profiled
}

/// Operators that can neither trap nor leave the function nor grow memory, so that the
/// counter need not be in the global when they run ([`Counter::Local`]). Everything not
/// listed (loads, stores, division, float-to-int truncation, calls, table and bulk
/// operations, `memory.grow`, `unreachable`, SIMD) is treated as observable.
fn cannot_trap(op: &Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::Nop
            | O::Block { .. }
            | O::Loop { .. }
            | O::If { .. }
            | O::Else
            | O::End
            | O::Br { .. }
            | O::BrIf { .. }
            | O::BrTable { .. }
            | O::Drop
            | O::Select
            | O::TypedSelect { .. }
            | O::LocalGet { .. }
            | O::LocalSet { .. }
            | O::LocalTee { .. }
            | O::GlobalGet { .. }
            | O::GlobalSet { .. }
            | O::I32Const { .. }
            | O::I64Const { .. }
            | O::F32Const { .. }
            | O::F64Const { .. }
            | O::MemorySize { .. }
            | O::TableSize { .. }
            | O::RefNull { .. }
            | O::RefIsNull
            | O::RefFunc { .. }
            | O::DataDrop { .. }
            | O::ElemDrop { .. }
            | O::I32Eqz
            | O::I32Eq
            | O::I32Ne
            | O::I32LtS
            | O::I32LtU
            | O::I32GtS
            | O::I32GtU
            | O::I32LeS
            | O::I32LeU
            | O::I32GeS
            | O::I32GeU
            | O::I64Eqz
            | O::I64Eq
            | O::I64Ne
            | O::I64LtS
            | O::I64LtU
            | O::I64GtS
            | O::I64GtU
            | O::I64LeS
            | O::I64LeU
            | O::I64GeS
            | O::I64GeU
            | O::F32Eq
            | O::F32Ne
            | O::F32Lt
            | O::F32Gt
            | O::F32Le
            | O::F32Ge
            | O::F64Eq
            | O::F64Ne
            | O::F64Lt
            | O::F64Gt
            | O::F64Le
            | O::F64Ge
            | O::I32Clz
            | O::I32Ctz
            | O::I32Popcnt
            | O::I32Add
            | O::I32Sub
            | O::I32Mul
            | O::I32And
            | O::I32Or
            | O::I32Xor
            | O::I32Shl
            | O::I32ShrS
            | O::I32ShrU
            | O::I32Rotl
            | O::I32Rotr
            | O::I64Clz
            | O::I64Ctz
            | O::I64Popcnt
            | O::I64Add
            | O::I64Sub
            | O::I64Mul
            | O::I64And
            | O::I64Or
            | O::I64Xor
            | O::I64Shl
            | O::I64ShrS
            | O::I64ShrU
            | O::I64Rotl
            | O::I64Rotr
            | O::F32Abs
            | O::F32Neg
            | O::F32Ceil
            | O::F32Floor
            | O::F32Trunc
            | O::F32Nearest
            | O::F32Sqrt
            | O::F32Add
            | O::F32Sub
            | O::F32Mul
            | O::F32Div
            | O::F32Min
            | O::F32Max
            | O::F32Copysign
            | O::F64Abs
            | O::F64Neg
            | O::F64Ceil
            | O::F64Floor
            | O::F64Trunc
            | O::F64Nearest
            | O::F64Sqrt
            | O::F64Add
            | O::F64Sub
            | O::F64Mul
            | O::F64Div
            | O::F64Min
            | O::F64Max
            | O::F64Copysign
            | O::I32WrapI64
            | O::I64ExtendI32S
            | O::I64ExtendI32U
            | O::F32ConvertI32S
            | O::F32ConvertI32U
            | O::F32ConvertI64S
            | O::F32ConvertI64U
            | O::F32DemoteF64
            | O::F64ConvertI32S
            | O::F64ConvertI32U
            | O::F64ConvertI64S
            | O::F64ConvertI64U
            | O::F64PromoteF32
            | O::I32ReinterpretF32
            | O::I64ReinterpretF64
            | O::F32ReinterpretI32
            | O::F64ReinterpretI64
            | O::I32Extend8S
            | O::I32Extend16S
            | O::I64Extend8S
            | O::I64Extend16S
            | O::I64Extend32S
            | O::I32TruncSatF32S
            | O::I32TruncSatF32U
            | O::I32TruncSatF64S
            | O::I32TruncSatF64U
            | O::I64TruncSatF32S
            | O::I64TruncSatF32U
            | O::I64TruncSatF64S
            | O::I64TruncSatF64U
    )
}

/// Integer parameters that Cranelift's x86-64 calling conventions pass in registers after
/// the callee's and the caller's vmctx (six argument registers less those two).
const REGISTER_INT_PARAMS: usize = 4;

/// [`Counter::Local`]: the parameters of a defined function, `params` with the counter added
/// and every `i32` that goes on the machine stack widened to `i64`. Cranelift's x86-64
/// backend stores an `i32` stack argument with a 32-bit store and the callee loads its slot
/// with a 64-bit load, which store-to-load forwarding cannot serve: the callee waits until
/// the store reaches the cache. A call with two such arguments took 3.4 times as long as with
/// `i64` ones (wasmtime 48, this project's 2-core AMD EPYC machine), and the loads took 17% of
/// the compiled code's time in the default run's prefill. The conversions are injected code:
/// they charge nothing and cannot trap, so no count changes.
fn call_params(params: &[ValType]) -> Vec<ValType> {
    let mut ints = 0;
    params
        .iter()
        .chain([&ValType::I64])
        .map(|&ty| match ty {
            ValType::I32 | ValType::I64 => {
                ints += 1;
                if ints > REGISTER_INT_PARAMS {
                    ValType::I64
                } else {
                    ty
                }
            }
            other => other,
        })
        .collect()
}

/// The positions of `params` that [`call_params`] widens.
fn widened(params: &[ValType]) -> impl Iterator<Item = bool> + '_ {
    params
        .iter()
        .zip(call_params(params))
        .map(|(&from, to)| from != to)
}

/// How many of `types` there are of each type, in order of first appearance.
fn count_by_type(types: &[ValType]) -> Vec<(ValType, u32)> {
    let mut counts: Vec<(ValType, u32)> = Vec::new();
    for &ty in types {
        match counts.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, n)) => *n += 1,
            None => counts.push((ty, 1)),
        }
    }
    counts
}

struct Emitter<'a, 'i> {
    wasm: &'a [u8],
    info: &'i ModuleInfo,
    counter: Counter,
    /// Whether to add the profiling probes.
    profile: bool,
    shift: Shift,
    module: wasm_encoder::Module,
    emitted: [bool; 6],
    code: Option<CodeSection>,
    code_remaining: u32,

    // Indices of what we inject.
    counter_global: u32,
    flag_global: u32,
    ooi_type: u32,
    decrement_type: u32,
    ooi_func: u32,
    decrement_func: u32,
    /// The profiling probes and their types (when `profile`).
    enter_func: u32,
    exit_func: u32,
    enter_type: u32,
    exit_type: u32,
    /// [`Counter::Local`]: type `t` with the counter added is `local_types + t` (imports and
    /// what replaces them), the type `[] -> results of t` is `result_types + t`, and `t` as
    /// defined functions have it, [`call_params`] and the counter's result, `call_types + t`.
    local_types: u32,
    result_types: u32,
    call_types: u32,
    /// Per type: the first parameter [`call_params`] widens.
    first_widened: Vec<Option<usize>>,
    /// [`Counter::Local`]: the wrapper of `info.entry_funcs[k]` is `wrappers + k`.
    wrappers: u32,
    /// Native stable accesses, when the module gets them: calls to the imports go to the
    /// injected functions from `native_func` on (after the wrappers: the read's, then the
    /// write's), which read global `stable_bytes_global`.
    native: Option<NativeStable>,
    native_func: u32,
    stable_bytes_global: u32,
    /// Index (among defined functions) of the body being instrumented.
    body_index: usize,

    // Statistics.
    op_count: u64,
    memory_grow_count: u64,
    mutates_instance: bool,

    // Scratch buffers reused across function bodies.
    ops: Vec<Operator<'a>>,
    offsets: Vec<usize>,
    points: Vec<Point>,
    body: Vec<u8>,
}

impl<'a, 'i> Emitter<'a, 'i> {
    fn new(
        wasm: &'a [u8],
        info: &'i ModuleInfo,
        counter: Counter,
        profile: bool,
        native: Option<NativeStable>,
    ) -> Self {
        let injected = if profile { 3 } else { 1 };
        let decrement_func = info.num_func_imports + injected + info.num_defined_funcs;
        Emitter {
            wasm,
            info,
            counter,
            profile,
            shift: Shift {
                num_func_imports: info.num_func_imports,
                injected,
            },
            module: wasm_encoder::Module::new(),
            emitted: [false; 6],
            code: None,
            code_remaining: 0,
            counter_global: info.num_globals,
            flag_global: info.num_globals + 1,
            ooi_type: info.num_types,
            decrement_type: info.num_types + 1,
            ooi_func: info.num_func_imports,
            decrement_func,
            enter_func: info.num_func_imports + 1,
            exit_func: info.num_func_imports + 2,
            enter_type: 4 * info.num_types + 2,
            exit_type: 4 * info.num_types + 3,
            local_types: info.num_types + 2,
            result_types: 2 * info.num_types + 2,
            call_types: 3 * info.num_types + 2,
            first_widened: info
                .types
                .iter()
                .map(|ty| {
                    ty.as_ref()
                        .and_then(|ty| widened(&ty.params).position(|w| w))
                })
                .collect(),
            wrappers: decrement_func + 1,
            native,
            native_func: decrement_func + 1 + info.entry_funcs.len() as u32,
            stable_bytes_global: info.num_globals + 2,
            body_index: 0,
            op_count: 0,
            memory_grow_count: 0,
            mutates_instance: false,
            ops: Vec::new(),
            offsets: Vec::new(),
            points: Vec::new(),
            body: Vec::new(),
        }
    }

    fn run(&mut self) -> Result<(), InstrumentError> {
        let wasm = self.wasm;
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(invalid)? {
                Payload::Version { .. } => {}
                Payload::TypeSection(reader) => {
                    self.before(SectionId::Type);
                    let mut types = TypeSection::new();
                    self.shift
                        .parse_type_section(&mut types, reader)
                        .map_err(reencode_error)?;
                    self.add_types(&mut types);
                    self.module.section(&types);
                    self.emitted[Synth::Type.index()] = true;
                }
                Payload::ImportSection(reader) => {
                    self.before(SectionId::Import);
                    let mut imports = ImportSection::new();
                    match self.counter {
                        Counter::Global => self
                            .shift
                            .parse_import_section(&mut imports, reader)
                            .map_err(reencode_error)?,
                        Counter::Local => CountedImports {
                            local_types: self.local_types,
                        }
                        .parse_import_section(&mut imports, reader)
                        .map_err(reencode_error)?,
                    }
                    self.add_imports(&mut imports);
                    self.module.section(&imports);
                    self.emitted[Synth::Import.index()] = true;
                }
                Payload::FunctionSection(reader) => {
                    self.before(SectionId::Function);
                    let mut functions = FunctionSection::new();
                    match self.counter {
                        Counter::Global => self
                            .shift
                            .parse_function_section(&mut functions, reader)
                            .map_err(reencode_error)?,
                        Counter::Local => {
                            for ty in reader {
                                functions.function(self.call_types + ty.map_err(invalid)?);
                            }
                        }
                    }
                    self.add_functions(&mut functions);
                    self.module.section(&functions);
                    self.emitted[Synth::Function.index()] = true;
                }
                Payload::TableSection(reader) => {
                    // Table initialisers may hold `ref.func`.
                    self.before(SectionId::Table);
                    let mut tables = wasm_encoder::TableSection::new();
                    self.shift
                        .parse_table_section(&mut tables, reader)
                        .map_err(reencode_error)?;
                    self.module.section(&tables);
                }
                Payload::MemorySection(reader) if self.native.is_some() => {
                    self.before(SectionId::Memory);
                    let mut memories = wasm_encoder::MemorySection::new();
                    wasm_encoder::reencode::RoundtripReencoder
                        .parse_memory_section(&mut memories, reader)
                        .map_err(reencode_error)?;
                    add_native_stable_memories(&mut memories);
                    self.module.section(&memories);
                }
                Payload::MemorySection(reader) => {
                    self.raw(SectionId::Memory, reader.range());
                }
                Payload::TagSection(reader) => {
                    self.raw(SectionId::Tag, reader.range());
                }
                Payload::GlobalSection(reader) => {
                    self.before(SectionId::Global);
                    let mut globals = GlobalSection::new();
                    self.shift
                        .parse_global_section(&mut globals, reader)
                        .map_err(reencode_error)?;
                    self.add_globals(&mut globals);
                    self.module.section(&globals);
                    self.emitted[Synth::Global.index()] = true;
                }
                Payload::ExportSection(reader) => {
                    self.before(SectionId::Export);
                    let mut exports = ExportSection::new();
                    match self.counter {
                        Counter::Global => self
                            .shift
                            .parse_export_section(&mut exports, reader)
                            .map_err(reencode_error)?,
                        Counter::Local => {
                            for export in reader {
                                let export = export.map_err(invalid)?;
                                let kind = self
                                    .shift
                                    .export_kind(export.kind)
                                    .map_err(reencode_error)?;
                                let index = match kind {
                                    ExportKind::Func => self.entry(export.index),
                                    _ => export.index,
                                };
                                exports.export(export.name, kind, index);
                            }
                        }
                    }
                    self.add_exports(&mut exports);
                    self.module.section(&exports);
                    self.emitted[Synth::Export.index()] = true;
                }
                Payload::StartSection { .. } => {
                    // Dropped: exported as `canister_start` instead (see the module docs).
                    self.before(SectionId::Start);
                }
                Payload::ElementSection(reader) => {
                    self.before(SectionId::Element);
                    let mut elements = wasm_encoder::ElementSection::new();
                    self.shift
                        .parse_element_section(&mut elements, reader)
                        .map_err(reencode_error)?;
                    self.module.section(&elements);
                }
                Payload::DataCountSection { range, .. } => {
                    self.raw(SectionId::DataCount, range);
                }
                Payload::CodeSectionStart { count, .. } => {
                    self.before(SectionId::Code);
                    self.code = Some(CodeSection::new());
                    self.code_remaining = count;
                    if count == 0 {
                        self.finish_code();
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    self.instrument_body(body)?;
                    self.body_index += 1;
                    self.code_remaining -= 1;
                    if self.code_remaining == 0 {
                        self.finish_code();
                    }
                }
                Payload::DataSection(reader) => {
                    self.raw(SectionId::Data, reader.range());
                }
                Payload::CustomSection(reader) => match reader.as_known() {
                    KnownCustom::Name(names) => {
                        // A name section we cannot parse is dropped rather than copied with
                        // stale function indices.
                        if let Some(names) = self.remap_names(names) {
                            self.module.section(&names);
                        }
                    }
                    _ => {
                        self.module.section(&wasm_encoder::CustomSection {
                            name: reader.name().into(),
                            data: reader.data().into(),
                        });
                    }
                },
                Payload::End(_) => self.before_rank(RANK_END),
                other => {
                    // Validation rejected everything else already.
                    return Err(InstrumentError::InvalidModule {
                        message: format!("unexpected section {other:?}"),
                        offset: 0,
                    });
                }
            }
        }
        Ok(())
    }

    /// Copies a section we don't change byte for byte.
    fn raw(&mut self, id: SectionId, range: Range<usize>) {
        self.before(id);
        self.module.section(&RawSection {
            id: id as u8,
            data: &self.wasm[range],
        });
    }

    fn before(&mut self, id: SectionId) {
        self.before_rank(rank(id));
    }

    /// Emits the sections we need but the input lacks, for every such section that must
    /// come before a section of rank `next`.
    fn before_rank(&mut self, next: u8) {
        for synth in SYNTHS {
            if rank(synth.id()) < next && !self.emitted[synth.index()] {
                self.emitted[synth.index()] = true;
                match synth {
                    Synth::Type => {
                        let mut s = TypeSection::new();
                        self.add_types(&mut s);
                        self.module.section(&s);
                    }
                    Synth::Import => {
                        let mut s = ImportSection::new();
                        self.add_imports(&mut s);
                        self.module.section(&s);
                    }
                    Synth::Function => {
                        let mut s = FunctionSection::new();
                        self.add_functions(&mut s);
                        self.module.section(&s);
                    }
                    Synth::Global => {
                        let mut s = GlobalSection::new();
                        self.add_globals(&mut s);
                        self.module.section(&s);
                    }
                    Synth::Export => {
                        let mut s = ExportSection::new();
                        self.add_exports(&mut s);
                        self.module.section(&s);
                    }
                    Synth::Code => {
                        self.code = Some(CodeSection::new());
                        self.finish_code();
                    }
                }
            }
        }
    }

    fn add_types(&self, types: &mut TypeSection) {
        types.ty().function([], []);
        types.ty().function([ValType::I64], [ValType::I64]);
        // Profiling needs the result types for the block around each body (the counted
        // types come along, unused with the global counter, to keep one index layout).
        if self.counter == Counter::Local || self.profile {
            let with_counter = |vals: &[ValType]| [vals, &[ValType::I64]].concat();
            for ty in self.info.types.iter().flatten() {
                types
                    .ty()
                    .function(with_counter(&ty.params), with_counter(&ty.results));
            }
            for ty in self.info.types.iter().flatten() {
                types.ty().function([], ty.results.iter().copied());
            }
            for ty in self.info.types.iter().flatten() {
                types
                    .ty()
                    .function(call_params(&ty.params), with_counter(&ty.results));
            }
        }
        if self.profile {
            types.ty().function([ValType::I32, ValType::I64], []);
            types.ty().function([ValType::I64], []);
        }
    }

    /// What a call to System API import `func` calls: the import, or the injected function
    /// of the native stable accesses in its place.
    fn system_api(&self, func: u32) -> u32 {
        let Some(native) = self.native else {
            return func;
        };
        let accesses = [native.read, native.write].into_iter().flatten();
        (self.native_func..)
            .zip(accesses)
            .find(|(_, access)| access.import == func)
            .map_or(func, |(injected, _)| injected)
    }

    /// The function the host calls for defined function `func`: its wrapper with
    /// [`Counter::Local`], the function itself (shifted) otherwise.
    fn entry(&self, func: u32) -> u32 {
        match self.counter {
            Counter::Local if func >= self.info.num_func_imports => {
                let k = self
                    .info
                    .entry_funcs
                    .iter()
                    .position(|&f| f == func)
                    .expect("every exported defined function has a wrapper");
                self.wrappers + k as u32
            }
            _ => self.shift.func(func),
        }
    }

    fn signature(&self, ty: u32) -> &Signature {
        self.info.types[ty as usize]
            .as_ref()
            .expect("Counter::Local and profiling are only used with function types")
    }

    /// The type a call to a defined function or an indirect call passes arguments of.
    fn called_type(&self, op: &Operator) -> Option<u32> {
        let nfi = self.info.num_func_imports;
        match *op {
            Operator::Call { function_index } | Operator::ReturnCall { function_index }
                if function_index >= nfi =>
            {
                Some(self.info.func_types[(function_index - nfi) as usize])
            }
            Operator::CallIndirect { type_index, .. }
            | Operator::ReturnCallIndirect { type_index, .. } => Some(type_index),
            _ => None,
        }
    }

    fn func_type(&self, func: u32) -> &Signature {
        self.signature(self.info.func_types[(func - self.info.num_func_imports) as usize])
    }

    fn add_imports(&self, imports: &mut ImportSection) {
        imports.import(
            SYSTEM_MODULE,
            OUT_OF_INSTRUCTIONS_IMPORT,
            EntityType::Function(self.ooi_type),
        );
        if self.profile {
            imports.import(
                SYSTEM_MODULE,
                PROFILE_ENTER_IMPORT,
                EntityType::Function(self.enter_type),
            );
            imports.import(
                SYSTEM_MODULE,
                PROFILE_EXIT_IMPORT,
                EntityType::Function(self.exit_type),
            );
        }
    }

    fn add_functions(&self, functions: &mut FunctionSection) {
        functions.function(self.decrement_type);
        if self.counter == Counter::Local {
            for &func in &self.info.entry_funcs {
                let ty = self.info.func_types[(func - self.info.num_func_imports) as usize];
                functions.function(ty);
            }
        }
        if let Some(native) = self.native {
            for access in [native.read, native.write].into_iter().flatten() {
                // The import's type with the counter, as every System API call has it.
                functions.function(self.local_types + access.ty);
            }
        }
    }

    fn add_globals(&self, globals: &mut GlobalSection) {
        let mut zero = |val_type, init: &ConstExpr| {
            globals.global(
                GlobalType {
                    val_type,
                    mutable: true,
                    shared: false,
                },
                init,
            );
        };
        // The instruction counter, the out-of-instructions flag, and the stable memory's
        // size for the native accesses.
        zero(ValType::I64, &ConstExpr::i64_const(0));
        zero(ValType::I32, &ConstExpr::i32_const(0));
        if self.native.is_some() {
            zero(ValType::I64, &ConstExpr::i64_const(0));
        }
    }

    fn add_exports(&self, exports: &mut ExportSection) {
        exports.export(
            INSTRUCTION_COUNTER_EXPORT,
            ExportKind::Global,
            self.counter_global,
        );
        exports.export(
            OUT_OF_INSTRUCTIONS_FLAG_EXPORT,
            ExportKind::Global,
            self.flag_global,
        );
        // The host reads and writes the heap through an export, like the replica, which
        // exports memory 0 of every canister.
        if !self.info.memory_exported && !self.info.memories64.is_empty() {
            let name = if self.info.export_names.iter().any(|n| n == "memory") {
                "canister memory"
            } else {
                "memory"
            };
            exports.export(name, ExportKind::Memory, 0);
        }
        for &g in &self.info.mutable_globals {
            exports.export(
                &format!("{PERSISTENT_GLOBAL_PREFIX}{g}"),
                ExportKind::Global,
                g,
            );
        }
        if let Some(start) = self.info.start {
            exports.export(CANISTER_START_EXPORT, ExportKind::Func, self.entry(start));
        }
        if self.native.is_some() {
            exports.export(STABLE_CACHE_EXPORT, ExportKind::Memory, 1);
            exports.export(STABLE_MARKS_EXPORT, ExportKind::Memory, 2);
            exports.export(
                STABLE_BYTES_EXPORT,
                ExportKind::Global,
                self.stable_bytes_global,
            );
        }
    }

    /// Appends the decrement helper and emits the code section.
    fn finish_code(&mut self) {
        let mut code = self.code.take().expect("code section in progress");
        code.function(&self.decrement_helper());
        if self.counter == Counter::Local {
            for &func in &self.info.entry_funcs {
                code.function(&self.entry_wrapper(func));
            }
        }
        if let Some(native) = self.native {
            let accesses = [(native.read, false), (native.write, true)];
            for (access, write) in accesses {
                if let Some(access) = access {
                    code.function(&native_access_function(
                        access,
                        write,
                        self.info.mem64,
                        self.stable_bytes_global,
                    ));
                }
            }
        }
        self.module.section(&code);
        self.emitted[Synth::Code.index()] = true;
    }

    /// `(func (param $n i64) (result i64) (local $new i64) ...)`, the same operator sequence
    /// as the replica's helper: counter = counter - n, saturating to i64::MIN on underflow;
    /// then `out_of_instructions` if the counter is negative; returns n.
    fn decrement_helper(&self) -> Function {
        let counter = self.counter_global;
        let mut f = Function::new([(1, ValType::I64)]);
        f.instructions()
            .global_get(counter)
            .local_get(0)
            .i64_sub()
            .local_tee(1)
            .global_get(counter)
            .i64_gt_s()
            .if_(BlockType::Result(ValType::I64))
            .i64_const(i64::MIN)
            .else_()
            .local_get(1)
            .end()
            .global_set(counter)
            .global_get(counter)
            .i64_const(0)
            .i64_lt_s()
            .if_(BlockType::Empty)
            .call(self.ooi_func)
            .end()
            .local_get(0)
            .end();
        f
    }

    /// [`Counter::Local`]: what the host calls instead of defined function `func`: the same
    /// signature, unmetered (the replica has no such code), passing the global counter in
    /// and storing the returned one.
    fn entry_wrapper(&self, func: u32) -> Function {
        let mut f = Function::new([]);
        let mut sink = f.instructions();
        for (i, widened) in (0..).zip(widened(&self.func_type(func).params)) {
            sink.local_get(i);
            if widened {
                sink.i64_extend_i32_u();
            }
        }
        sink.global_get(self.counter_global)
            .call(self.shift.func(func))
            .global_set(self.counter_global)
            .end();
        f
    }

    /// The replica's `injections()`: one linear scan that splits the body into metered
    /// segments and records where bulk operations need their dynamic charge.
    fn compute_points(&mut self) {
        let info = self.info;
        let mem64 = info.mem64;
        let points = &mut self.points;
        points.clear();
        // "Start with at least one fuel being consumed because even empty functions should
        // consume at least some fuel."
        let mut position = 0;
        let mut scope = Scope::Reentrant;
        let mut cost = 1;
        for (i, op) in self.ops.iter().enumerate() {
            cost += instruction_cost(op, mem64);
            let next_scope = match op {
                Operator::Loop { .. } => Some(Scope::Reentrant),
                Operator::If { .. } => Some(Scope::NonReentrant),
                Operator::Else
                | Operator::Br { .. }
                | Operator::BrIf { .. }
                | Operator::BrTable { .. }
                | Operator::End
                | Operator::Return
                | Operator::Unreachable
                | Operator::ReturnCall { .. }
                | Operator::ReturnCallIndirect { .. } => Some(Scope::NonReentrant),
                _ => {
                    if let Some(size) = bulk_size_operand(info, op) {
                        points.push(Point {
                            position: i,
                            injection: Injection::Dynamic(size),
                        });
                    }
                    None
                }
            };
            if let Some(next_scope) = next_scope {
                points.push(Point {
                    position,
                    injection: Injection::Static { scope, cost },
                });
                position = i + 1;
                scope = next_scope;
                cost = 0;
            }
        }
        // The segment after the final `end` is empty and never recorded, as in the replica.
        // A stable sort keeps a dynamic point ahead of a static one at the same position
        // (the dynamic one was pushed first), which is the replica's order too.
        points.sort_by_key(|p| p.position);
    }

    fn instrument_body(&mut self, body: FunctionBody<'a>) -> Result<(), InstrumentError> {
        let content = body.range();
        let ops_start = body
            .get_binary_reader_for_operators()
            .map_err(invalid)?
            .original_position();

        self.ops.clear();
        self.offsets.clear();
        let mut reader = body.get_operators_reader().map_err(invalid)?;
        while !reader.eof() {
            let (op, offset) = reader.read_with_offset().map_err(invalid)?;
            self.ops.push(op);
            self.offsets.push(offset);
        }
        self.offsets.push(content.end);
        self.compute_points();

        let mut body_bytes = std::mem::take(&mut self.body);
        body_bytes.clear();
        match self.counter {
            Counter::Global => self.emit_global_counter(&mut body_bytes, content, ops_start),
            Counter::Local => {
                self.emit_local_counter(&mut body_bytes, &body, content, ops_start)?
            }
        }
        let injected: u64 = self
            .points
            .iter()
            .map(|p| replica_injected_ops(p.injection))
            .sum();
        for op in &self.ops {
            match op {
                Operator::MemoryGrow { .. } => self.memory_grow_count += 1,
                Operator::TableSet { .. }
                | Operator::TableGrow { .. }
                | Operator::TableFill { .. }
                | Operator::TableCopy { .. }
                | Operator::TableInit { .. }
                | Operator::ElemDrop { .. }
                | Operator::DataDrop { .. } => self.mutates_instance = true,
                _ => {}
            }
        }
        self.op_count += self.ops.len() as u64 + injected;
        self.code
            .as_mut()
            .expect("code section in progress")
            .raw(&body_bytes);
        self.body = body_bytes;
        Ok(())
    }

    /// The replica's code: locals and operators copied verbatim except where a function
    /// index changes, the injections in front of their operators. With profiling, the body
    /// runs inside a block of the function's result type (so that a branch out of the body
    /// passes the exit probe too) and calls and returns get their probes.
    fn emit_global_counter(&self, out: &mut Vec<u8>, content: Range<usize>, ops_start: usize) {
        let wasm = self.wasm;
        let nfi = self.info.num_func_imports;
        let g = self.counter_global;
        out.extend_from_slice(&wasm[content.start..ops_start]);
        if self.profile {
            let ty = self.info.func_types[self.body_index];
            let block_type = match self
                .func_type(nfi + self.body_index as u32)
                .results
                .as_slice()
            {
                [] => BlockType::Empty,
                [one] => BlockType::Result(*one),
                _ => BlockType::FunctionType(self.result_types + ty),
            };
            sink(out).block(block_type);
            self.probe_enter(out, nfi + self.body_index as u32, CounterIn::Global(g));
        }
        let mut run_start = ops_start;
        let mut next_point = 0;
        for i in 0..self.ops.len() {
            let at = self.offsets[i];
            while let Some(point) = self.points.get(next_point).filter(|p| p.position == i) {
                next_point += 1;
                self.injection(point.injection, out, wasm, run_start, at);
                run_start = at;
            }
            let op = &self.ops[i];
            if self.profile {
                let probed = match *op {
                    Operator::Call { function_index } if function_index < nfi => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_enter(out, function_index, CounterIn::Global(g));
                        sink(out).call(function_index);
                        self.probe_exit(out, CounterIn::Global(g));
                        true
                    }
                    Operator::ReturnCall { function_index } if function_index < nfi => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_enter(out, function_index, CounterIn::Global(g));
                        sink(out).call(function_index);
                        // The call's exit, then this function's.
                        self.probe_exit(out, CounterIn::Global(g));
                        self.probe_exit(out, CounterIn::Global(g));
                        sink(out).return_();
                        true
                    }
                    Operator::ReturnCall { .. }
                    | Operator::ReturnCallIndirect { .. }
                    | Operator::Return => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_exit(out, CounterIn::Global(g));
                        match self.remapped(op) {
                            Some(instruction) => instruction.encode(out),
                            None => out.extend_from_slice(&wasm[at..self.offsets[i + 1]]),
                        }
                        true
                    }
                    _ => false,
                };
                if probed {
                    run_start = self.offsets[i + 1];
                    continue;
                }
            }
            if let Some(instruction) = self.remapped(op) {
                out.extend_from_slice(&wasm[run_start..at]);
                instruction.encode(out);
                run_start = self.offsets[i + 1];
            }
        }
        debug_assert_eq!(
            next_point,
            self.points.len(),
            "injection after the final end"
        );
        out.extend_from_slice(&wasm[run_start..content.end]);
        if self.profile {
            // The original final `end` closed the block.
            self.probe_exit(out, CounterIn::Global(g));
            sink(out).end();
        }
    }

    /// Function indices move up past the injected imports.
    fn remapped(&self, op: &Operator) -> Option<Instruction<'static>> {
        let nfi = self.info.num_func_imports;
        match *op {
            Operator::Call { function_index } if function_index >= nfi => {
                Some(Instruction::Call(self.shift.func(function_index)))
            }
            Operator::ReturnCall { function_index } if function_index >= nfi => {
                Some(Instruction::ReturnCall(self.shift.func(function_index)))
            }
            Operator::RefFunc { function_index } if function_index >= nfi => {
                Some(Instruction::RefFunc(self.shift.func(function_index)))
            }
            _ => None,
        }
    }

    /// [`Counter::Local`]: the counter is parameter `c` (after the original parameters, so
    /// declared locals move up by one); two scratch locals are appended for the table index
    /// of indirect calls. The body runs inside a block of the function's result type, after
    /// which the counter is pushed as the extra result, so that branches to the function
    /// label keep their meaning.
    fn emit_local_counter(
        &self,
        out: &mut Vec<u8>,
        body: &FunctionBody<'a>,
        content: Range<usize>,
        ops_start: usize,
    ) -> Result<(), InstrumentError> {
        let wasm = self.wasm;
        let nfi = self.info.num_func_imports;
        let signature = self.func_type(nfi + self.body_index as u32);
        let params = signature.params.len() as u32;
        let c = params;

        let mut groups = Vec::new();
        let mut declared = 0u32;
        for group in body.get_locals_reader().map_err(invalid)? {
            let (count, ty) = group.map_err(invalid)?;
            let ty = wasm_encoder::reencode::RoundtripReencoder
                .val_type(ty)
                .map_err(reencode_error)?;
            declared += count;
            groups.push((count, ty));
        }
        groups.push((1, ValType::I32));
        groups.push((1, ValType::I64));
        let scratch32 = params + 1 + declared;
        let scratch64 = scratch32 + 1;
        // The widened parameters arrive as i64: the body reads and writes an i32 copy.
        let mut next_local = scratch64 + 1;
        let shadows: Vec<Option<u32>> = widened(&signature.params)
            .map(|w| {
                w.then(|| {
                    groups.push((1, ValType::I32));
                    next_local += 1;
                    next_local - 1
                })
            })
            .collect();
        // Calls to widened signatures set their arguments from the first widened one on
        // aside and push them back widened: locals for the most any call sets aside.
        let mut aside: Vec<(ValType, u32)> = Vec::new();
        for op in &self.ops {
            let Some(ty) = self.called_type(op) else {
                continue;
            };
            let Some(first) = self.first_widened[ty as usize] else {
                continue;
            };
            for (param, n) in count_by_type(&self.signature(ty).params[first..]) {
                match aside.iter_mut().find(|(t, _)| *t == param) {
                    Some((_, have)) => *have = (*have).max(n),
                    None => aside.push((param, n)),
                }
            }
        }
        let aside: Vec<(ValType, u32)> = aside
            .into_iter()
            .map(|(ty, n)| {
                groups.push((n, ty));
                next_local += n;
                (ty, next_local - n)
            })
            .collect();
        (groups.len() as u32).encode(out);
        for (count, ty) in &groups {
            count.encode(out);
            ty.encode(out);
        }
        for (param, shadow) in (0..).zip(&shadows) {
            if let Some(shadow) = *shadow {
                sink(out).local_get(param).i32_wrap_i64().local_set(shadow);
            }
        }
        let widen_arguments = |out: &mut Vec<u8>, call: &Operator| {
            let Some(ty) = self.called_type(call) else {
                return;
            };
            let Some(first) = self.first_widened[ty as usize] else {
                return;
            };
            let params = &self.signature(ty).params[first..];
            let mut used: Vec<(ValType, u32)> = aside.iter().map(|&(t, _)| (t, 0)).collect();
            let locals: Vec<u32> = params
                .iter()
                .map(|param| {
                    let (slot, base) = used
                        .iter_mut()
                        .zip(&aside)
                        .find(|((t, _), _)| t == param)
                        .map(|((_, k), &(_, base))| (k, base))
                        .expect("a local set aside for every type");
                    *slot += 1;
                    base + *slot - 1
                })
                .collect();
            let mut sink = sink(out);
            for &local in locals.iter().rev() {
                sink.local_set(local);
            }
            let widened: Vec<bool> = widened(&self.signature(ty).params).skip(first).collect();
            for (&local, widened) in locals.iter().zip(widened) {
                sink.local_get(local);
                if widened {
                    sink.i64_extend_i32_u();
                }
            }
        };
        let block_type = match signature.results.as_slice() {
            [] => BlockType::Empty,
            [one] => BlockType::Result(*one),
            _ => BlockType::FunctionType(self.result_types + self.info.func_types[self.body_index]),
        };
        wasm_encoder::InstructionSink::new(out).block(block_type);
        self.probe_enter(out, nfi + self.body_index as u32, CounterIn::Local(c));

        let g = self.counter_global;
        // Whether the counter local may differ from the global.
        let mut dirty = true;
        let flush = |out: &mut Vec<u8>, dirty: &mut bool| {
            if std::mem::take(dirty) {
                wasm_encoder::InstructionSink::new(out)
                    .local_get(c)
                    .global_set(g);
            }
        };
        // Where the body's locals are now: declared ones one up (after the counter), widened
        // parameters in their i32 copies.
        let moved = |local: u32| match shadows.get(local as usize) {
            Some(Some(shadow)) => *shadow,
            _ if local >= params => local + 1,
            _ => local,
        };
        let heap_traps_stale = stale_at_heap_traps(Counter::Local, self.profile);
        let mut run_start = ops_start;
        let mut next_point = 0;
        for i in 0..self.ops.len() {
            let at = self.offsets[i];
            while let Some(point) = self.points.get(next_point).filter(|p| p.position == i) {
                next_point += 1;
                out.extend_from_slice(&wasm[run_start..at]);
                run_start = at;
                match point.injection {
                    Injection::Static { scope, cost } => {
                        // A new segment can be entered from several places.
                        dirty = true;
                        if scope == Scope::NonReentrant && cost == 0 {
                            continue;
                        }
                        let mut sink = wasm_encoder::InstructionSink::new(out);
                        sink.local_get(c).i64_const(cost as i64).i64_sub();
                        if scope == Scope::NonReentrant {
                            sink.local_set(c);
                        } else {
                            sink.local_tee(c)
                                .i64_const(0)
                                .i64_lt_s()
                                .if_(BlockType::Empty)
                                .local_get(c)
                                .global_set(g)
                                .i32_const(1)
                                .global_set(self.flag_global)
                                .unreachable()
                                .end();
                        }
                    }
                    Injection::Dynamic(size) => {
                        flush(out, &mut dirty);
                        let mut sink = wasm_encoder::InstructionSink::new(out);
                        match size {
                            SizeOperand::I64 => sink.call(self.decrement_func),
                            SizeOperand::I32 => sink
                                .i64_extend_i32_u()
                                .call(self.decrement_func)
                                .i32_wrap_i64(),
                        };
                        sink.global_get(g).local_set(c);
                    }
                }
            }

            let op = &self.ops[i];
            let scratch = |table: u32| {
                if self
                    .info
                    .tables64
                    .get(table as usize)
                    .copied()
                    .unwrap_or(false)
                {
                    scratch64
                } else {
                    scratch32
                }
            };
            // Copies the verbatim bytes before this operator and skips the operator itself,
            // which the caller then writes in its new form.
            let replace = |out: &mut Vec<u8>, run_start: &mut usize| {
                out.extend_from_slice(&wasm[*run_start..at]);
                *run_start = self.offsets[i + 1];
            };
            // Calls also bring the global up to date: a callee's stack-overflow trap or a
            // System API call sees it.
            let replace_call = |out: &mut Vec<u8>, run_start: &mut usize, dirty: &mut bool| {
                replace(out, run_start);
                flush(out, dirty);
            };
            match *op {
                Operator::LocalGet { local_index } if moved(local_index) != local_index => {
                    replace(out, &mut run_start);
                    sink(out).local_get(moved(local_index));
                }
                Operator::LocalSet { local_index } if moved(local_index) != local_index => {
                    replace(out, &mut run_start);
                    sink(out).local_set(moved(local_index));
                }
                Operator::LocalTee { local_index } if moved(local_index) != local_index => {
                    replace(out, &mut run_start);
                    sink(out).local_tee(moved(local_index));
                }
                Operator::Call { function_index } if function_index < nfi => {
                    // The global is brought up to date too: a trap before the host takes
                    // over sees it (a host function that fails writes its own count).
                    replace_call(out, &mut run_start, &mut dirty);
                    self.probe_enter(out, function_index, CounterIn::Local(c));
                    // System API calls charge: the counter goes in and comes back.
                    sink(out)
                        .local_get(c)
                        .call(self.system_api(function_index))
                        .local_set(c);
                    self.probe_exit(out, CounterIn::Local(c));
                    dirty = true;
                }
                Operator::Call { function_index } => {
                    replace_call(out, &mut run_start, &mut dirty);
                    widen_arguments(out, op);
                    sink(out)
                        .local_get(c)
                        .call(self.shift.func(function_index))
                        .local_set(c);
                    dirty = true;
                }
                Operator::CallIndirect {
                    type_index,
                    table_index,
                } => {
                    replace_call(out, &mut run_start, &mut dirty);
                    let index = scratch(table_index);
                    sink(out).local_set(index);
                    widen_arguments(out, op);
                    sink(out)
                        .local_get(c)
                        .local_get(index)
                        .call_indirect(table_index, self.call_types + type_index)
                        .local_set(c);
                    dirty = true;
                }
                Operator::ReturnCall { function_index } if function_index < nfi => {
                    replace_call(out, &mut run_start, &mut dirty);
                    // The import returns the results and the counter, as this function does.
                    if self.profile {
                        // The call's exit and this function's, with the counter it returned.
                        self.probe_enter(out, function_index, CounterIn::Local(c));
                        sink(out)
                            .local_get(c)
                            .call(function_index)
                            .local_set(scratch64);
                        self.probe_exit(out, CounterIn::Local(scratch64));
                        self.probe_exit(out, CounterIn::Local(scratch64));
                        sink(out).local_get(scratch64).return_();
                    } else {
                        sink(out)
                            .local_get(c)
                            .call(self.system_api(function_index))
                            .return_();
                    }
                }
                Operator::ReturnCall { function_index } => {
                    replace_call(out, &mut run_start, &mut dirty);
                    // The callee takes this function's place: it leaves first.
                    self.probe_exit(out, CounterIn::Local(c));
                    widen_arguments(out, op);
                    sink(out)
                        .local_get(c)
                        .return_call(self.shift.func(function_index));
                }
                Operator::ReturnCallIndirect {
                    type_index,
                    table_index,
                } => {
                    replace_call(out, &mut run_start, &mut dirty);
                    self.probe_exit(out, CounterIn::Local(c));
                    let index = scratch(table_index);
                    sink(out).local_set(index);
                    widen_arguments(out, op);
                    sink(out)
                        .local_get(c)
                        .local_get(index)
                        .return_call_indirect(table_index, self.call_types + type_index);
                }
                Operator::Return => {
                    replace(out, &mut run_start);
                    self.probe_exit(out, CounterIn::Local(c));
                    sink(out).local_get(c).return_();
                }
                Operator::RefFunc { function_index } if function_index >= nfi => {
                    replace(out, &mut run_start);
                    sink(out).ref_func(self.shift.func(function_index));
                }
                // Kept verbatim; if it can trap, the global is brought up to date first (the
                // count at a trap is what the message is charged), except before loads and
                // stores ([`stale_at_heap_traps`]).
                _ if dirty
                    && !cannot_trap(op)
                    && !(heap_traps_stale && is_scalar_load_or_store(op)) =>
                {
                    out.extend_from_slice(&wasm[run_start..at]);
                    run_start = at;
                    flush(out, &mut dirty);
                }
                _ => {}
            }
        }
        debug_assert_eq!(
            next_point,
            self.points.len(),
            "injection after the final end"
        );
        // The original final `end` closes the block; the function returns the counter too.
        out.extend_from_slice(&wasm[run_start..content.end]);
        self.probe_exit(out, CounterIn::Local(c));
        wasm_encoder::InstructionSink::new(out).local_get(c).end();
        Ok(())
    }

    /// With profiling: `profile_enter(func, counter)`.
    fn probe_enter(&self, out: &mut Vec<u8>, func: u32, counter: CounterIn) {
        if self.profile {
            let mut s = sink(out);
            s.i32_const(func as i32);
            counter.push(&mut s).call(self.enter_func);
        }
    }

    /// With profiling: `profile_exit(counter)`.
    fn probe_exit(&self, out: &mut Vec<u8>, counter: CounterIn) {
        if self.profile {
            let mut s = sink(out);
            counter.push(&mut s).call(self.exit_func);
        }
    }

    /// Writes the pending verbatim bytes `wasm[run_start..at]` and then the replica's
    /// injected code (nothing for a skipped zero-cost segment).
    fn injection(
        &self,
        injection: Injection,
        out: &mut Vec<u8>,
        wasm: &[u8],
        run_start: usize,
        at: usize,
    ) {
        out.extend_from_slice(&wasm[run_start..at]);
        let counter = self.counter_global;
        let mut sink = wasm_encoder::InstructionSink::new(out);
        match injection {
            Injection::Static { scope, cost } => {
                if scope == Scope::NonReentrant && cost == 0 {
                    return;
                }
                sink.global_get(counter)
                    .i64_const(cost as i64)
                    .i64_sub()
                    .global_set(counter);
                if scope == Scope::Reentrant {
                    sink.global_get(counter)
                        .i64_const(0)
                        .i64_lt_s()
                        .if_(BlockType::Empty)
                        .call(self.ooi_func)
                        .end();
                }
            }
            Injection::Dynamic(SizeOperand::I64) => {
                sink.call(self.decrement_func);
            }
            Injection::Dynamic(SizeOperand::I32) => {
                // The helper returns its argument, so wrapping back is lossless.
                sink.i64_extend_i32_u()
                    .call(self.decrement_func)
                    .i32_wrap_i64();
            }
        }
    }

    /// Names of the injected imports, in index order.
    fn name_injected_imports(&self, names: &mut NameMap) {
        names.append(self.ooi_func, OUT_OF_INSTRUCTIONS_IMPORT);
        if self.profile {
            names.append(self.enter_func, PROFILE_ENTER_IMPORT);
            names.append(self.exit_func, PROFILE_EXIT_IMPORT);
        }
    }

    /// The `name` section with function indices remapped, plus names for the injected
    /// imports and helper. `None` if it does not parse.
    fn remap_names(&mut self, reader: NameSectionReader<'_>) -> Option<NameSection> {
        let mut out = NameSection::new();
        for subsection in reader {
            match subsection.ok()? {
                Name::Function(map) => {
                    let mut names = NameMap::new();
                    let mut import_named = false;
                    for naming in map {
                        let naming = naming.ok()?;
                        if !import_named && naming.index >= self.info.num_func_imports {
                            self.name_injected_imports(&mut names);
                            import_named = true;
                        }
                        names.append(self.shift.func(naming.index), naming.name);
                    }
                    if !import_named {
                        self.name_injected_imports(&mut names);
                    }
                    names.append(self.decrement_func, "decrement_instruction_counter");
                    out.functions(&names);
                }
                other => {
                    utils::parse_custom_name_subsection(&mut self.shift, &mut out, other).ok()?
                }
            }
        }
        Some(out)
    }
}
