//! What the instrumentation adds to the module around the function bodies: the types,
//! imports, globals and exports of the counter (and of the probes and the native stable
//! accesses), the decrement helper, and the [`Counter::Local`] entry wrappers.

use wasm_encoder::{
    BlockType, ConstExpr, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, ImportSection, TypeSection, ValType,
};

use super::calls::{call_params, widened};
use super::emitter::{Emitter, Synth};
use super::native_stable::native_access_function;
use super::{
    Counter, CANISTER_START_EXPORT, HEAP_MARKS_EXPORT, HEAP_TOUCH_IMPORT,
    INSTRUCTION_COUNTER_EXPORT, OUT_OF_INSTRUCTIONS_FLAG_EXPORT, OUT_OF_INSTRUCTIONS_IMPORT,
    PERSISTENT_GLOBAL_PREFIX, PROFILE_ENTER_IMPORT, PROFILE_EXIT_IMPORT, STABLE_BYTES_EXPORT,
    STABLE_CACHE_EXPORT, STABLE_MARKS_EXPORT, SYSTEM_MODULE, TABLE_EXPORT,
};

impl Emitter<'_, '_> {
    pub(super) fn add_types(&self, types: &mut TypeSection) {
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
        if self.marks.is_some() {
            // Heap marks come with the local counter only: the counted types are there.
            debug_assert_eq!(self.counter, Counter::Local);
            let range = [ValType::I64, ValType::I64, ValType::I32, ValType::I64];
            types.ty().function(range, []);
        }
    }

    pub(super) fn add_imports(&self, imports: &mut ImportSection) {
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
        if self.marks.is_some() {
            imports.import(
                SYSTEM_MODULE,
                HEAP_TOUCH_IMPORT,
                EntityType::Function(self.touch_type),
            );
        }
    }

    pub(super) fn add_functions(&self, functions: &mut FunctionSection) {
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

    pub(super) fn add_globals(&self, globals: &mut GlobalSection) {
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

    pub(super) fn add_exports(&self, exports: &mut ExportSection) {
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
        // The host calls a response's callback through the table, like the replica, which
        // exports table 0 of every canister (`export_table` in its instrumentation).
        if !self.info.table_exported
            && !self.info.tables64.is_empty()
            && !self.info.export_names.iter().any(|n| n == TABLE_EXPORT)
        {
            exports.export(TABLE_EXPORT, ExportKind::Table, 0);
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
        if let Some(marks) = self.marks {
            exports.export(HEAP_MARKS_EXPORT, ExportKind::Memory, marks.memory);
        }
    }

    /// Appends the decrement helper and emits the code section.
    pub(super) fn finish_code(&mut self) {
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
                        self.marks,
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
}
