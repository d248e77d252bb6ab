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
//!   out-of-instructions check at function entry and at every loop header.
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

use super::cost::instruction_cost;

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

/// Exports the input module must not define (the replica's `RESERVED_SYMBOLS` that we inject).
const RESERVED_EXPORTS: [&str; 2] = [INSTRUCTION_COUNTER_EXPORT, CANISTER_START_EXPORT];

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

/// Instruments `wasm` for instruction metering, exactly as the IC replica does.
pub fn instrument(wasm: &[u8]) -> Result<Instrumented, InstrumentError> {
    let info = validate_and_scan(wasm)?;
    let mut emitter = Emitter::new(wasm, &info);
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
    })
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
                    info.num_types += group.map_err(invalid)?.types().len() as u32;
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import.map_err(invalid)?.ty {
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => info.num_func_imports += 1,
                        TypeRef::Table(t) => info.tables64.push(t.table64),
                        TypeRef::Memory(m) => info.memories64.push(m.memory64),
                        TypeRef::Global(_) => info.num_globals += 1,
                        TypeRef::Tag(_) => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => info.num_defined_funcs = reader.count(),
            Payload::TableSection(reader) => {
                for table in reader {
                    info.tables64.push(table.map_err(invalid)?.ty.table64);
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    info.memories64.push(memory.map_err(invalid)?.memory64);
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    if global.map_err(invalid)?.ty.mutable {
                        info.mutable_globals.push(info.num_globals);
                    }
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
                    if RESERVED_EXPORTS.contains(&export.name)
                        || export.name.starts_with(PERSISTENT_GLOBAL_PREFIX)
                    {
                        return Err(InstrumentError::ReservedExport {
                            name: export.name.to_string(),
                        });
                    }
                }
            }
            Payload::StartSection { func, .. } => info.start = Some(func),
            _ => {}
        }
    }
    info.mem64 = info.memories64.first().copied().unwrap_or(false);
    Ok(info)
}

// -------------------------------------------------------------------------------------------
// Pass 2: the rewrite
// -------------------------------------------------------------------------------------------

/// Re-encoder that moves defined functions up by one index (the injected import comes
/// after the original function imports).
struct Shift {
    num_func_imports: u32,
}

impl Shift {
    fn func(&self, index: u32) -> u32 {
        if index >= self.num_func_imports {
            index + 1
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

struct Emitter<'a, 'i> {
    wasm: &'a [u8],
    info: &'i ModuleInfo,
    shift: Shift,
    module: wasm_encoder::Module,
    emitted: [bool; 6],
    code: Option<CodeSection>,
    code_remaining: u32,

    // Indices of what we inject.
    counter_global: u32,
    ooi_type: u32,
    decrement_type: u32,
    ooi_func: u32,
    decrement_func: u32,

    // Statistics.
    op_count: u64,
    memory_grow_count: u64,

    // Scratch buffers reused across function bodies.
    ops: Vec<Operator<'a>>,
    offsets: Vec<usize>,
    points: Vec<Point>,
    body: Vec<u8>,
}

impl<'a, 'i> Emitter<'a, 'i> {
    fn new(wasm: &'a [u8], info: &'i ModuleInfo) -> Self {
        Emitter {
            wasm,
            info,
            shift: Shift {
                num_func_imports: info.num_func_imports,
            },
            module: wasm_encoder::Module::new(),
            emitted: [false; 6],
            code: None,
            code_remaining: 0,
            counter_global: info.num_globals,
            ooi_type: info.num_types,
            decrement_type: info.num_types + 1,
            ooi_func: info.num_func_imports,
            decrement_func: info.num_func_imports + 1 + info.num_defined_funcs,
            op_count: 0,
            memory_grow_count: 0,
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
                    self.shift
                        .parse_import_section(&mut imports, reader)
                        .map_err(reencode_error)?;
                    self.add_imports(&mut imports);
                    self.module.section(&imports);
                    self.emitted[Synth::Import.index()] = true;
                }
                Payload::FunctionSection(reader) => {
                    self.before(SectionId::Function);
                    let mut functions = FunctionSection::new();
                    self.shift
                        .parse_function_section(&mut functions, reader)
                        .map_err(reencode_error)?;
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
                    self.shift
                        .parse_export_section(&mut exports, reader)
                        .map_err(reencode_error)?;
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
    }

    fn add_imports(&self, imports: &mut ImportSection) {
        imports.import(
            SYSTEM_MODULE,
            OUT_OF_INSTRUCTIONS_IMPORT,
            EntityType::Function(self.ooi_type),
        );
    }

    fn add_functions(&self, functions: &mut FunctionSection) {
        functions.function(self.decrement_type);
    }

    fn add_globals(&self, globals: &mut GlobalSection) {
        globals.global(
            GlobalType {
                val_type: ValType::I64,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i64_const(0),
        );
    }

    fn add_exports(&self, exports: &mut ExportSection) {
        exports.export(
            INSTRUCTION_COUNTER_EXPORT,
            ExportKind::Global,
            self.counter_global,
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
            exports.export(
                CANISTER_START_EXPORT,
                ExportKind::Func,
                self.shift.func(start),
            );
        }
    }

    /// Appends the decrement helper and emits the code section.
    fn finish_code(&mut self) {
        let mut code = self.code.take().expect("code section in progress");
        code.function(&self.decrement_helper());
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

        // Locals are copied verbatim; operators too, except where an index changes.
        let wasm = self.wasm;
        let mut body_bytes = std::mem::take(&mut self.body);
        body_bytes.clear();
        body_bytes.extend_from_slice(&wasm[content.start..ops_start]);

        let mut injected = 0u64;
        let mut run_start = ops_start;
        let mut next_point = 0;
        for i in 0..self.ops.len() {
            let at = self.offsets[i];
            while let Some(point) = self.points.get(next_point).filter(|p| p.position == i) {
                next_point += 1;
                let ops = self.injection(point.injection, &mut body_bytes, wasm, run_start, at);
                run_start = at;
                injected += ops;
            }
            let nfi = self.info.num_func_imports;
            let remapped = match self.ops[i] {
                Operator::Call { function_index } if function_index >= nfi => {
                    Some(Instruction::Call(function_index + 1))
                }
                Operator::ReturnCall { function_index } if function_index >= nfi => {
                    Some(Instruction::ReturnCall(function_index + 1))
                }
                Operator::RefFunc { function_index } if function_index >= nfi => {
                    Some(Instruction::RefFunc(function_index + 1))
                }
                Operator::MemoryGrow { .. } => {
                    self.memory_grow_count += 1;
                    None
                }
                _ => None,
            };
            if let Some(instruction) = remapped {
                body_bytes.extend_from_slice(&wasm[run_start..at]);
                instruction.encode(&mut body_bytes);
                run_start = self.offsets[i + 1];
            }
        }
        debug_assert_eq!(
            next_point,
            self.points.len(),
            "injection after the final end"
        );
        body_bytes.extend_from_slice(&wasm[run_start..content.end]);

        self.op_count += self.ops.len() as u64 + injected;
        self.code
            .as_mut()
            .expect("code section in progress")
            .raw(&body_bytes);
        self.body = body_bytes;
        Ok(())
    }

    /// Writes the pending verbatim bytes `wasm[run_start..at]` and then the injected code;
    /// returns the number of injected operators (0 for a skipped zero-cost segment).
    fn injection(
        &self,
        injection: Injection,
        out: &mut Vec<u8>,
        wasm: &[u8],
        run_start: usize,
        at: usize,
    ) -> u64 {
        out.extend_from_slice(&wasm[run_start..at]);
        let counter = self.counter_global;
        let mut sink = wasm_encoder::InstructionSink::new(out);
        match injection {
            Injection::Static { scope, cost } => {
                if scope == Scope::NonReentrant && cost == 0 {
                    return 0;
                }
                sink.global_get(counter)
                    .i64_const(cost as i64)
                    .i64_sub()
                    .global_set(counter);
                if scope == Scope::NonReentrant {
                    return 4;
                }
                sink.global_get(counter)
                    .i64_const(0)
                    .i64_lt_s()
                    .if_(BlockType::Empty)
                    .call(self.ooi_func)
                    .end();
                10
            }
            Injection::Dynamic(SizeOperand::I64) => {
                sink.call(self.decrement_func);
                1
            }
            Injection::Dynamic(SizeOperand::I32) => {
                // The helper returns its argument, so wrapping back is lossless.
                sink.i64_extend_i32_u()
                    .call(self.decrement_func)
                    .i32_wrap_i64();
                3
            }
        }
    }

    /// The `name` section with function indices remapped, plus names for the injected
    /// import and helper. `None` if it does not parse.
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
                            names.append(self.ooi_func, OUT_OF_INSTRUCTIONS_IMPORT);
                            import_named = true;
                        }
                        names.append(self.shift.func(naming.index), naming.name);
                    }
                    if !import_named {
                        names.append(self.ooi_func, OUT_OF_INSTRUCTIONS_IMPORT);
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
