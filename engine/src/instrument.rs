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
//!
//! The parts, in the order a module goes through them: [`scan`] validates the input and
//! gathers what the rewrite needs; [`emitter`] walks it again and writes the output, section
//! by section, with [`injected`] adding the counter, the helpers, the wrappers and their
//! exports; per function body, [`segments`] splits the code into metered segments as the
//! replica does, and [`global_counter`] or [`local_counter`] writes the charges (the latter
//! with [`traps`] deciding where the counter must be in the global, and [`calls`] its calling
//! convention), with the [`probes`] of profiling; [`native_stable`] is the optional fast path
//! for `ic0.stable64_read`/`write`.

mod calls;
mod emitter;
mod global_counter;
mod heap_marks;
mod injected;
mod local_counter;
mod native_stable;
mod probes;
mod scan;
mod segments;
mod traps;

use std::convert::Infallible;
use std::fmt;

use wasmparser::WasmFeatures;

use emitter::Emitter;
pub use heap_marks::{
    HEAP_MARKS_EXPORT, HEAP_TOUCH_IMPORT, MARK_ACCESSED, MARK_WRITTEN as HEAP_MARK_WRITTEN,
    TOUCH_COPY, TOUCH_READ, TOUCH_WRITE,
};
use native_stable::{native_access, NativeStable};
pub use native_stable::{
    MARK_CACHED, MARK_SEEN, MARK_WRITTEN, STABLE_BYTES_EXPORT, STABLE_CACHE_BYTES,
    STABLE_CACHE_EXPORT, STABLE_MARKS_EXPORT,
};
use scan::validate_and_scan;
pub use traps::stale_at_heap_traps;

/// Export name of the injected instruction counter global.
pub const INSTRUCTION_COUNTER_EXPORT: &str = "canister counter_instructions";
/// Export name of table 0 when the module does not export it: where the host finds the
/// callbacks of the module's calls.
pub const TABLE_EXPORT: &str = "__icbench table";
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
    /// Whether the module's own code finds its first touches of each heap page
    /// ([`HEAP_MARKS_EXPORT`]): a module with the local counter and a memory of its own whose
    /// code touches the heap only with scalar loads and stores, `memory.copy` and
    /// `memory.fill`. Its instances run with the heap readable and writable; every other
    /// module's with the kernel's faults.
    pub heap_marks: bool,
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
    instrument_options(wasm, counter, false, true)
}

/// The module as the engine runs it: with the profiling probes or not, with heap marks
/// where the module allows them and `heap_marks` asks for them (else the kernel's faults
/// find its first touches).
///
/// With `profile`, the module calls [`PROFILE_ENTER_IMPORT`] at the start of every function
/// (with its index in the input module) and before every System API call (with the import's
/// index), and [`PROFILE_EXIT_IMPORT`] wherever a function returns and after every System API
/// call, each with the instruction counter. The probes are not metered: the counter, every
/// charge and the compilation cost are those of the unprofiled module.
pub fn instrument_options(
    wasm: &[u8],
    counter: Counter,
    profile: bool,
    heap_marks: bool,
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
    let heap_marks = heap_marks
        && counter == Counter::Local
        && !info.memory_imported
        && !info.icbench_prefix_exported
        && info.memories64.len() == 1
        && !info.heap_marks_blocked
        && info.data_lengths.len() as u64 <= heap_marks::MAX_SEGMENTS;
    let mut emitter = Emitter::new(wasm, &info, counter, profile, native, heap_marks);
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
        heap_marks,
    })
}
