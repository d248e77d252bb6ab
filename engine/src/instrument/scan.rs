//! Pass 1: validation with the IC's features, and the facts about the input module that the
//! rewrite needs ([`ModuleInfo`]).

use wasm_encoder::reencode::Reencode;
use wasm_encoder::ValType;
use wasmparser::{
    FuncValidatorAllocations, Operator, Parser, Payload, TypeRef, ValidPayload, Validator,
    WasmFeatures,
};

#[cfg(doc)]
use super::Counter;
use super::{
    invalid, InstrumentError, FEATURES, ICBENCH_EXPORT_PREFIX, PERSISTENT_GLOBAL_PREFIX,
    RESERVED_EXPORTS,
};

#[derive(Default)]
pub(super) struct ModuleInfo {
    pub(super) num_types: u32,
    pub(super) num_func_imports: u32,
    pub(super) num_defined_funcs: u32,
    pub(super) num_globals: u32,
    /// Index type of every memory / table (imports first), true = 64-bit.
    pub(super) memories64: Vec<bool>,
    pub(super) tables64: Vec<bool>,
    /// Whether memory 0 is a 64-bit memory (the replica's "main memory type").
    pub(super) mem64: bool,
    pub(super) start: Option<u32>,
    /// Indices of the module's own mutable globals: exported so the host can save and
    /// restore them around messages (a trap rolls them back), as the replica does.
    pub(super) mutable_globals: Vec<u32>,
    /// Whether memory 0 is already exported, and every export name (to pick a free one).
    pub(super) memory_exported: bool,
    /// Whether table 0 is already exported (the host finds it by any export name).
    pub(super) table_exported: bool,
    pub(super) export_names: Vec<String>,
    /// Every type, `None` for a non-function type (none pass validation with our features).
    pub(super) types: Vec<Option<Signature>>,
    /// Type index of every defined function.
    pub(super) func_types: Vec<u32>,
    /// Defined functions that the host calls (exported, or the start function), in order of
    /// first appearance: each gets a wrapper with [`Counter::Local`].
    pub(super) entry_funcs: Vec<u32>,
    /// Initial size of memory 0 in bytes.
    pub(super) initial_bytes: u64,
    /// The module references an imported function from a table, a `ref.func` initialiser or
    /// an export, so that [`Counter::Local`] cannot be used.
    pub(super) local_counter_blocked: bool,
    /// The imports `ic0.stable64_read` and `stable64_write`: function and type index.
    pub(super) stable64_read: Option<(u32, u32)>,
    pub(super) stable64_write: Option<(u32, u32)>,
    /// Memory 0 is imported, not defined.
    pub(super) memory_imported: bool,
    /// The module exports a name with [`ICBENCH_EXPORT_PREFIX`].
    pub(super) icbench_prefix_exported: bool,
    /// A function body touches the heap in a way heap marks do not cover
    /// ([`super::heap_marks::covered`]).
    pub(super) heap_marks_blocked: bool,
    /// Per data segment, the bytes `memory.init` can copy from it before any `data.drop`.
    pub(super) data_lengths: Vec<u64>,
}

/// A function type in the encoder's terms.
pub(super) struct Signature {
    pub(super) params: Vec<ValType>,
    pub(super) results: Vec<ValType>,
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

pub(super) const WASM_PAGE: u64 = 65536;

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

pub(super) fn validate_and_scan(wasm: &[u8]) -> Result<ModuleInfo, InstrumentError> {
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
            if !info.heap_marks_blocked {
                let mut ops = body.get_operators_reader().map_err(invalid)?;
                while !ops.eof() {
                    if !super::heap_marks::covered(&ops.read().map_err(invalid)?) {
                        info.heap_marks_blocked = true;
                        break;
                    }
                }
            }
        }
        info.scan(payload)?;
    }
    info.mem64 = info.memories64.first().copied().unwrap_or(false);
    if info.types.iter().any(Option::is_none) {
        info.local_counter_blocked = true;
    }
    Ok(info)
}

impl ModuleInfo {
    /// Notes what one (validated) section of the input says.
    fn scan(&mut self, payload: Payload<'_>) -> Result<(), InstrumentError> {
        match payload {
            Payload::TypeSection(reader) => {
                for group in reader {
                    for ty in group.map_err(invalid)?.types() {
                        self.num_types += 1;
                        self.types.push(match &ty.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(f) => Signature::of(f),
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    self.scan_import(import.map_err(invalid)?);
                }
            }
            Payload::FunctionSection(reader) => {
                self.num_defined_funcs = reader.count();
                for ty in reader {
                    self.func_types.push(ty.map_err(invalid)?);
                }
            }
            Payload::TableSection(reader) => {
                for table in reader {
                    let table = table.map_err(invalid)?;
                    self.tables64.push(table.ty.table64);
                    if let wasmparser::TableInit::Expr(expr) = &table.init {
                        self.scan_const_expr(expr)?;
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let memory = memory.map_err(invalid)?;
                    if self.memories64.is_empty() {
                        self.initial_bytes = memory.initial.saturating_mul(WASM_PAGE);
                    }
                    self.memories64.push(memory.memory64);
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(invalid)?;
                    check_data_segment(self, &data)?;
                    // An active segment is dropped once instantiation has copied it.
                    let passive = matches!(data.kind, wasmparser::DataKind::Passive);
                    self.data_lengths
                        .push(if passive { data.data.len() as u64 } else { 0 });
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    self.scan_global(global.map_err(invalid)?)?;
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    self.scan_export(export.map_err(invalid)?)?;
                }
            }
            Payload::StartSection { func, .. } => {
                self.start = Some(func);
                self.note_entry(func);
            }
            Payload::ElementSection(reader) => {
                for element in reader {
                    self.scan_element(element.map_err(invalid)?)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn scan_import(&mut self, import: wasmparser::Import<'_>) {
        match import.ty {
            TypeRef::Func(ty) | TypeRef::FuncExact(ty) => {
                match (import.module, import.name) {
                    ("ic0", "stable64_read") => {
                        self.stable64_read = Some((self.num_func_imports, ty))
                    }
                    ("ic0", "stable64_write") => {
                        self.stable64_write = Some((self.num_func_imports, ty))
                    }
                    _ => {}
                }
                self.num_func_imports += 1
            }
            TypeRef::Table(t) => self.tables64.push(t.table64),
            TypeRef::Memory(m) => {
                self.memory_imported = true;
                self.memories64.push(m.memory64)
            }
            TypeRef::Global(_) => self.num_globals += 1,
            TypeRef::Tag(_) => {}
        }
    }

    fn scan_global(&mut self, global: wasmparser::Global<'_>) -> Result<(), InstrumentError> {
        if global.ty.mutable {
            if global.ty.content_type.is_reference_type() {
                return Err(InstrumentError::MutableReferenceGlobal {
                    index: self.num_globals,
                });
            }
            self.mutable_globals.push(self.num_globals);
        }
        self.scan_const_expr(&global.init_expr)?;
        self.num_globals += 1;
        Ok(())
    }

    fn scan_export(&mut self, export: wasmparser::Export<'_>) -> Result<(), InstrumentError> {
        self.export_names.push(export.name.to_string());
        if export.kind == wasmparser::ExternalKind::Memory && export.index == 0 {
            self.memory_exported = true;
        }
        if export.kind == wasmparser::ExternalKind::Table && export.index == 0 {
            self.table_exported = true;
        }
        if matches!(
            export.kind,
            wasmparser::ExternalKind::Func | wasmparser::ExternalKind::FuncExact
        ) {
            self.note_entry(export.index);
        }
        if export.name.starts_with(ICBENCH_EXPORT_PREFIX) {
            self.icbench_prefix_exported = true;
        }
        if RESERVED_EXPORTS.contains(&export.name)
            || export.name.starts_with(PERSISTENT_GLOBAL_PREFIX)
        {
            return Err(InstrumentError::ReservedExport {
                name: export.name.to_string(),
            });
        }
        Ok(())
    }

    fn scan_element(&mut self, element: wasmparser::Element<'_>) -> Result<(), InstrumentError> {
        match element.items {
            wasmparser::ElementItems::Functions(funcs) => {
                for func in funcs {
                    if func.map_err(invalid)? < self.num_func_imports {
                        self.local_counter_blocked = true;
                    }
                }
            }
            wasmparser::ElementItems::Expressions(_, exprs) => {
                for expr in exprs {
                    self.scan_const_expr(&expr.map_err(invalid)?)?;
                }
            }
        }
        Ok(())
    }
}
