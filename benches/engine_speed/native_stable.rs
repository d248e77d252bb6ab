//! The ceiling of Wasm-native stable memory, for deciding whether to build it: the bench
//! canister with stable memory as a second linear memory, as the replica instruments it
//! (shared/research/ic-metering.md, section 4), run on plain wasmtime. Every call to
//! `ic0.stable64_read`/`write`/`size`/`grow` goes to a function added to the module that
//! checks the bounds, marks and counts the 4 KiB pages it touches in a bytemap (a third
//! memory, one byte per page: bit 0 written, bit 1 accessed) and copies with `memory.copy`.
//!
//! It is a measurement, not an engine: no instruction counter, no fees, no page limits,
//! no undo log (the engine would keep one by write-protecting the stable memory, as it does
//! the heap, which this does not pay for), so its time is a lower bound for a metered
//! implementation. The host still links the stable functions; nothing calls them.

use std::collections::HashMap;

use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{BlockType, Function, Instruction as I, MemArg, MemoryType, ValType};
use wasmparser::{Parser, Payload, TypeRef};

/// The bytemap's export, so that the host can clear it between messages.
pub const BYTEMAP_EXPORT: &str = "stable_bytemap";
/// 4 KiB pages the bytemap covers: 4 GiB of stable memory (the bench needs far less).
const BYTEMAP_PAGES: u64 = 1 << 20;

const READ: &str = "stable64_read";
const WRITE: &str = "stable64_write";
const SIZE: &str = "stable64_size";
const GROW: &str = "stable64_grow";
const REPLACED: [&str; 4] = [READ, WRITE, SIZE, GROW];

const STABLE: u32 = 1;
const BYTEMAP: u32 = 2;

/// The module with its 64-bit stable memory calls replaced (see the module's docs).
pub fn transform(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let mut imported = HashMap::new();
    let (mut functions, mut types) = (0u32, 0u32);
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| e.to_string())? {
            Payload::ImportSection(section) => {
                for import in section.into_imports() {
                    let import = import.map_err(|e| e.to_string())?;
                    if let TypeRef::Func(_) = import.ty {
                        if import.module == "ic0" && REPLACED.contains(&import.name) {
                            imported.insert(import.name.to_string(), functions);
                        }
                        functions += 1;
                    }
                }
            }
            Payload::TypeSection(section) => types = section.count(),
            Payload::FunctionSection(section) => functions += section.count(),
            Payload::MemorySection(section) if section.count() != 1 => {
                return Err("the prototype handles modules with one memory".into())
            }
            _ => {}
        }
    }
    let mut redirect = HashMap::new();
    for (i, name) in REPLACED.iter().enumerate() {
        let from = *imported
            .get(*name)
            .ok_or_else(|| format!("the module does not import ic0.{name}"))?;
        redirect.insert(from, functions + i as u32);
    }
    let mut module = wasm_encoder::Module::new();
    let mut r = Rewriter {
        redirect,
        first_type: types,
    };
    r.parse_core_module(&mut module, Parser::new(0), wasm)
        .map_err(|e| e.to_string())?;
    Ok(module.finish())
}

struct Rewriter {
    redirect: HashMap<u32, u32>,
    first_type: u32,
}

type Error = reencode::Error<std::convert::Infallible>;

impl Reencode for Rewriter {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, Error> {
        Ok(*self.redirect.get(&func).unwrap_or(&func))
    }

    fn parse_custom_section(
        &mut self,
        _: &mut wasm_encoder::Module,
        _: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), Error> {
        // Names would name the redirected imports by their new index; not needed here.
        Ok(())
    }

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), Error> {
        reencode::utils::parse_type_section(self, types, section)?;
        use ValType::I64;
        types.ty().function([I64, I64, I64], []); // read, write
        types.ty().function([], [I64]); // size
        types.ty().function([I64], [I64]); // grow
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), Error> {
        reencode::utils::parse_function_section(self, functions, section)?;
        let t = self.first_type;
        for ty in [t, t, t + 1, t + 2] {
            functions.function(ty);
        }
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut wasm_encoder::MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Result<(), Error> {
        reencode::utils::parse_memory_section(self, memories, section)?;
        memories.memory(MemoryType {
            minimum: 0,
            maximum: Some(BYTEMAP_PAGES / 16),
            memory64: true,
            shared: false,
            page_size_log2: None,
        });
        memories.memory(MemoryType {
            minimum: BYTEMAP_PAGES / 65536,
            maximum: Some(BYTEMAP_PAGES / 65536),
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut wasm_encoder::ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Result<(), Error> {
        reencode::utils::parse_export_section(self, exports, section)?;
        exports.export(BYTEMAP_EXPORT, wasm_encoder::ExportKind::Memory, BYTEMAP);
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut wasm_encoder::CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), Error> {
        reencode::utils::parse_code_section(self, code, section)?;
        code.function(&access(false));
        code.function(&access(true));
        let mut size = Function::new([]);
        size.instruction(&I::MemorySize(STABLE))
            .instruction(&I::End);
        code.function(&size);
        let mut grow = Function::new([]);
        grow.instruction(&I::LocalGet(0))
            .instruction(&I::MemoryGrow(STABLE))
            .instruction(&I::End);
        code.function(&grow);
        Ok(())
    }
}

/// `stable64_read(dst, offset, size)` or `stable64_write(offset, src, size)`: bounds, the
/// bytemap's marks for every page in the range, then the copy.
fn access(write: bool) -> Function {
    // Parameters: 0, 1, 2; locals: 3 = end, 4 = page, 5 = last page, 6 = mark.
    let (offset, heap) = if write { (0, 1) } else { (1, 0) };
    let (end, page, last, mark) = (3, 4, 5, 6);
    let mut f = Function::new([(3, ValType::I64), (1, ValType::I32)]);
    let byte = MemArg {
        offset: 0,
        align: 0,
        memory_index: BYTEMAP,
    };
    let bits = if write { 3 } else { 2 };
    for i in [
        // end = offset + size; trap on overflow or past the stable memory's size.
        I::LocalGet(offset),
        I::LocalGet(2),
        I::I64Add,
        I::LocalTee(end),
        I::LocalGet(offset),
        I::I64LtU,
        I::If(BlockType::Empty),
        I::Unreachable,
        I::End,
        I::LocalGet(end),
        I::MemorySize(STABLE),
        I::I64Const(16),
        I::I64Shl,
        I::I64GtU,
        I::If(BlockType::Empty),
        I::Unreachable,
        I::End,
        I::LocalGet(2),
        I::I64Eqz,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
        // for page in offset >> 12 ..= (end - 1) >> 12: mark it.
        I::LocalGet(offset),
        I::I64Const(12),
        I::I64ShrU,
        I::LocalSet(page),
        I::LocalGet(end),
        I::I64Const(1),
        I::I64Sub,
        I::I64Const(12),
        I::I64ShrU,
        I::LocalSet(last),
        I::Loop(BlockType::Empty),
        I::LocalGet(page),
        I::I32WrapI64,
        I::I32Load8U(byte),
        I::LocalTee(mark),
        I::I32Const(bits),
        I::I32And,
        I::I32Const(bits),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::LocalGet(page),
        I::I32WrapI64,
        I::LocalGet(mark),
        I::I32Const(bits),
        I::I32Or,
        I::I32Store8(byte),
        I::End,
        I::LocalGet(page),
        I::I64Const(1),
        I::I64Add,
        I::LocalTee(page),
        I::LocalGet(last),
        I::I64LeU,
        I::BrIf(0),
        I::End,
    ] {
        f.instruction(&i);
    }
    // memory.copy takes the destination's address type, the source's, and the length in
    // the narrower of the two (the heap's i32).
    let copy = if write {
        [
            I::LocalGet(0),
            I::LocalGet(heap),
            I::I32WrapI64,
            I::LocalGet(2),
            I::I32WrapI64,
            I::MemoryCopy {
                src_mem: 0,
                dst_mem: STABLE,
            },
        ]
    } else {
        [
            I::LocalGet(heap),
            I::I32WrapI64,
            I::LocalGet(1),
            I::LocalGet(2),
            I::I32WrapI64,
            I::MemoryCopy {
                src_mem: STABLE,
                dst_mem: 0,
            },
        ]
    };
    for i in copy {
        f.instruction(&i);
    }
    f.instruction(&I::End);
    f
}
