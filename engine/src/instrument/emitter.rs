//! Pass 2, the rewrite: [`Emitter`] walks the validated module again and writes the output,
//! section by section, in module order. Sections we add entries to are extended (or created
//! where the input has none, see [`Synth`]); function indices move up past the injected
//! imports ([`Shift`]); each function body is rewritten by the counter's pass
//! ([`super::global_counter`] or [`super::local_counter`]). Those passes, and what
//! [`super::injected`] adds to the sections, are `impl Emitter` blocks in their own files:
//! they use the indices kept here, and this file drives them.

use std::convert::Infallible;
use std::ops::Range;

use wasm_encoder::reencode::{utils, Reencode, RoundtripReencoder};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, FunctionSection, GlobalSection, ImportSection, NameMap,
    NameSection, RawSection, Section, SectionId, TypeSection,
};
use wasmparser::{
    CustomSectionReader, ExportSectionReader, FunctionBody, FunctionSectionReader,
    ImportSectionReader, KnownCustom, Name, NameSectionReader, Operator, Parser, Payload,
};

use super::calls::widened;
use super::heap_marks::{add_heap_marks_memory, Marks};
use super::native_stable::{add_native_stable_memories, NativeStable};
use super::scan::{ModuleInfo, Signature};
use super::segments::{compute_points, replica_injected_ops, Point};
use super::{invalid, reencode_error, Counter, InstrumentError, OUT_OF_INSTRUCTIONS_IMPORT};
use super::{HEAP_TOUCH_IMPORT, PROFILE_ENTER_IMPORT, PROFILE_EXIT_IMPORT};

/// Re-encoder that moves defined functions up past the injected imports, which come after
/// the original function imports.
pub(super) struct Shift {
    num_func_imports: u32,
    /// Imports injected after the original ones: `out_of_instructions`, and the two
    /// profiling probes when profiling.
    injected: u32,
}

impl Shift {
    pub(super) fn func(&self, index: u32) -> u32 {
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

/// The non-custom sections we add something to, in module order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Synth {
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

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

pub(super) fn sink(out: &mut Vec<u8>) -> wasm_encoder::InstructionSink<'_> {
    wasm_encoder::InstructionSink::new(out)
}

pub(super) struct Emitter<'a, 'i> {
    pub(super) wasm: &'a [u8],
    pub(super) info: &'i ModuleInfo,
    pub(super) counter: Counter,
    /// Whether to add the profiling probes.
    pub(super) profile: bool,
    pub(super) shift: Shift,
    pub(super) module: wasm_encoder::Module,
    pub(super) emitted: [bool; 6],
    pub(super) code: Option<CodeSection>,
    pub(super) code_remaining: u32,

    // Indices of what we inject.
    pub(super) counter_global: u32,
    pub(super) flag_global: u32,
    pub(super) ooi_type: u32,
    pub(super) decrement_type: u32,
    pub(super) ooi_func: u32,
    pub(super) decrement_func: u32,
    /// The profiling probes and their types (when `profile`).
    pub(super) enter_func: u32,
    pub(super) exit_func: u32,
    pub(super) enter_type: u32,
    pub(super) exit_type: u32,
    /// The heap marks' import's type (after the probes' types).
    pub(super) touch_type: u32,
    /// [`Counter::Local`]: type `t` with the counter added is `local_types + t` (imports and
    /// what replaces them), the type `[] -> results of t` is `result_types + t`, and `t` as
    /// defined functions have it, [`call_params`] and the counter's result, `call_types + t`.
    pub(super) local_types: u32,
    pub(super) result_types: u32,
    pub(super) call_types: u32,
    /// Per type: the first parameter [`call_params`] widens.
    pub(super) first_widened: Vec<Option<usize>>,
    /// [`Counter::Local`]: the wrapper of `info.entry_funcs[k]` is `wrappers + k`.
    pub(super) wrappers: u32,
    /// Native stable accesses, when the module gets them: calls to the imports go to the
    /// injected functions from `native_func` on (after the wrappers: the read's, then the
    /// write's), which read global `stable_bytes_global`.
    pub(super) native: Option<NativeStable>,
    pub(super) native_func: u32,
    pub(super) stable_bytes_global: u32,
    /// Heap marks, when the module gets them: the checks' memory and import.
    pub(super) marks: Option<Marks>,
    /// Index (among defined functions) of the body being instrumented.
    pub(super) body_index: usize,

    // Statistics.
    pub(super) op_count: u64,
    pub(super) memory_grow_count: u64,
    pub(super) mutates_instance: bool,

    // Scratch buffers reused across function bodies.
    pub(super) ops: Vec<Operator<'a>>,
    pub(super) offsets: Vec<usize>,
    pub(super) points: Vec<Point>,
    pub(super) body: Vec<u8>,
}

impl<'a, 'i> Emitter<'a, 'i> {
    pub(super) fn new(
        wasm: &'a [u8],
        info: &'i ModuleInfo,
        counter: Counter,
        profile: bool,
        native: Option<NativeStable>,
        heap_marks: bool,
    ) -> Self {
        let probes = if profile { 2 } else { 0 };
        let injected = 1 + probes + heap_marks as u32;
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
            touch_type: 4 * info.num_types + 2 + probes,
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
            marks: heap_marks.then_some(Marks {
                memory: if native.is_some() { 3 } else { 1 },
                touch: info.num_func_imports + 1 + probes,
                heap64: info.mem64,
            }),
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

    pub(super) fn run(&mut self) -> Result<(), InstrumentError> {
        let wasm = self.wasm;
        for payload in Parser::new(0).parse_all(wasm) {
            self.payload(payload.map_err(invalid)?)?;
        }
        Ok(())
    }

    /// Writes what one payload of the input becomes, after the sections of ours that must
    /// come first.
    fn payload(&mut self, payload: Payload<'a>) -> Result<(), InstrumentError> {
        match payload {
            Payload::Version { .. } => {}
            Payload::TypeSection(reader) => self.reencode_extended(
                Synth::Type,
                |em, types| em.shift.parse_type_section(types, reader),
                Self::add_types,
            )?,
            Payload::ImportSection(reader) => self.imports(reader)?,
            Payload::FunctionSection(reader) => self.functions(reader)?,
            Payload::TableSection(reader) => {
                // Table initialisers may hold `ref.func`.
                let tables = self.reencoded(SectionId::Table, |em, tables| {
                    em.shift.parse_table_section(tables, reader)
                })?;
                self.module.section(&tables);
            }
            Payload::MemorySection(reader) if self.native.is_some() || self.marks.is_some() => {
                let mut memories = self.reencoded(SectionId::Memory, |_, memories| {
                    RoundtripReencoder.parse_memory_section(memories, reader)
                })?;
                if self.native.is_some() {
                    add_native_stable_memories(&mut memories);
                }
                if self.marks.is_some() {
                    add_heap_marks_memory(&mut memories);
                }
                self.module.section(&memories);
            }
            Payload::MemorySection(reader) => self.raw(SectionId::Memory, reader.range()),
            Payload::TagSection(reader) => self.raw(SectionId::Tag, reader.range()),
            Payload::GlobalSection(reader) => self.reencode_extended(
                Synth::Global,
                |em, globals| em.shift.parse_global_section(globals, reader),
                Self::add_globals,
            )?,
            Payload::ExportSection(reader) => self.exports(reader)?,
            Payload::StartSection { .. } => {
                // Dropped: exported as `canister_start` instead (see the module docs).
                self.before(SectionId::Start);
            }
            Payload::ElementSection(reader) => {
                let elements = self.reencoded(SectionId::Element, |em, elements| {
                    em.shift.parse_element_section(elements, reader)
                })?;
                self.module.section(&elements);
            }
            Payload::DataCountSection { range, .. } => self.raw(SectionId::DataCount, range),
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
            Payload::DataSection(reader) => self.raw(SectionId::Data, reader.range()),
            Payload::CustomSection(reader) => self.custom(reader),
            Payload::End(_) => self.before_rank(RANK_END),
            other => {
                // Validation rejected everything else already.
                return Err(InstrumentError::InvalidModule {
                    message: format!("unexpected section {other:?}"),
                    offset: 0,
                });
            }
        }
        Ok(())
    }

    /// The import section: with [`Counter::Local`], System API imports take the counter.
    fn imports(&mut self, reader: ImportSectionReader<'_>) -> Result<(), InstrumentError> {
        let reencode = |em: &mut Self, imports: &mut ImportSection| match em.counter {
            Counter::Global => em.shift.parse_import_section(imports, reader),
            Counter::Local => CountedImports {
                local_types: em.local_types,
            }
            .parse_import_section(imports, reader),
        };
        self.reencode_extended(Synth::Import, reencode, Self::add_imports)
    }

    /// The function section: with [`Counter::Local`], defined functions take the counter.
    fn functions(&mut self, reader: FunctionSectionReader<'_>) -> Result<(), InstrumentError> {
        let reencode = |em: &mut Self, functions: &mut FunctionSection| {
            if em.counter == Counter::Global {
                return em.shift.parse_function_section(functions, reader);
            }
            for ty in reader {
                functions.function(em.call_types + ty?);
            }
            Ok(())
        };
        self.reencode_extended(Synth::Function, reencode, Self::add_functions)
    }

    /// The export section: with [`Counter::Local`], the host calls the wrappers. Functions
    /// are exported as [`Self::entry`] (the wrapper, or the function shifted as
    /// [`Shift`] re-encodes it); other exports keep their index, as [`Shift`] keeps it.
    fn exports(&mut self, reader: ExportSectionReader<'_>) -> Result<(), InstrumentError> {
        let reencode = |em: &mut Self, exports: &mut ExportSection| {
            for export in reader {
                let export = export?;
                let kind = em.shift.export_kind(export.kind)?;
                let index = match kind {
                    ExportKind::Func => em.entry(export.index),
                    _ => export.index,
                };
                exports.export(export.name, kind, index);
            }
            Ok(())
        };
        self.reencode_extended(Synth::Export, reencode, Self::add_exports)
    }

    /// Custom sections are copied, except the `name` section, whose function indices move.
    fn custom(&mut self, reader: CustomSectionReader<'_>) {
        match reader.as_known() {
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
        }
    }

    /// Section `id` of the input, re-encoded by `reencode`, after the sections of ours that
    /// must come first.
    fn reencoded<S: Default>(
        &mut self,
        id: SectionId,
        reencode: impl FnOnce(&mut Self, &mut S) -> Result<(), wasm_encoder::reencode::Error>,
    ) -> Result<S, InstrumentError> {
        self.before(id);
        let mut section = S::default();
        reencode(self, &mut section).map_err(reencode_error)?;
        Ok(section)
    }

    /// [`Self::reencoded`] and [`Self::extend`]: a section of the input with our entries.
    fn reencode_extended<S: Section + Default>(
        &mut self,
        synth: Synth,
        reencode: impl FnOnce(&mut Self, &mut S) -> Result<(), wasm_encoder::reencode::Error>,
        add: fn(&Self, &mut S),
    ) -> Result<(), InstrumentError> {
        let section = self.reencoded(synth.id(), reencode)?;
        self.extend(synth, section, add);
        Ok(())
    }

    /// Appends our entries to `section` (with `add`) and writes it.
    fn extend<S: Section>(&mut self, synth: Synth, mut section: S, add: fn(&Self, &mut S)) {
        add(self, &mut section);
        self.module.section(&section);
        self.emitted[synth.index()] = true;
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
                match synth {
                    Synth::Type => self.extend(synth, TypeSection::new(), Self::add_types),
                    Synth::Import => self.extend(synth, ImportSection::new(), Self::add_imports),
                    Synth::Function => {
                        self.extend(synth, FunctionSection::new(), Self::add_functions)
                    }
                    Synth::Global => self.extend(synth, GlobalSection::new(), Self::add_globals),
                    Synth::Export => self.extend(synth, ExportSection::new(), Self::add_exports),
                    Synth::Code => {
                        self.code = Some(CodeSection::new());
                        self.finish_code();
                    }
                }
            }
        }
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
        compute_points(self.info, &self.ops, &mut self.points);

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

    /// What a call to System API import `func` calls: the import, or the injected function
    /// of the native stable accesses in its place.
    pub(super) fn system_api(&self, func: u32) -> u32 {
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
    pub(super) fn entry(&self, func: u32) -> u32 {
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

    pub(super) fn signature(&self, ty: u32) -> &Signature {
        self.info.types[ty as usize]
            .as_ref()
            .expect("Counter::Local and profiling are only used with function types")
    }

    /// The type a call to a defined function or an indirect call passes arguments of.
    pub(super) fn called_type(&self, op: &Operator) -> Option<u32> {
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

    pub(super) fn func_type(&self, func: u32) -> &Signature {
        self.signature(self.info.func_types[(func - self.info.num_func_imports) as usize])
    }

    /// Names of the injected imports, in index order.
    fn name_injected_imports(&self, names: &mut NameMap) {
        names.append(self.ooi_func, OUT_OF_INSTRUCTIONS_IMPORT);
        if self.profile {
            names.append(self.enter_func, PROFILE_ENTER_IMPORT);
            names.append(self.exit_func, PROFILE_EXIT_IMPORT);
        }
        if let Some(marks) = self.marks {
            names.append(marks.touch, HEAP_TOUCH_IMPORT);
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
