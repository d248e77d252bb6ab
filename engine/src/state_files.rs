//! A canister's state as the files of a downloaded snapshot (dfx, icp-cli and PocketIC write
//! them): its module, its heap and stable memory as raw files, and the values the replica
//! keeps beside them. [`crate::embedded::EmbeddedEngine::load_state_files`] makes a canister of them and
//! [`crate::embedded::EmbeddedEngine::write_state_files`] writes a canister's state back in the same shape.

use std::fs::File;

use anyhow::{bail, Context, Result};

/// The value of one Wasm global, as a snapshot's metadata holds it (floats as their bits:
/// a NaN keeps its payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalValue {
    I32(i32),
    I64(i64),
    F32(u32),
    F64(u64),
    V128(u128),
}

impl GlobalValue {
    /// The type's name as the snapshot's metadata spells it (`i32`, ..., `v128`).
    pub fn type_name(&self) -> &'static str {
        match self {
            GlobalValue::I32(_) => "i32",
            GlobalValue::I64(_) => "i64",
            GlobalValue::F32(_) => "f32",
            GlobalValue::F64(_) => "f64",
            GlobalValue::V128(_) => "v128",
        }
    }
}

/// One global a snapshot lists: where it is in the module and whether a load sets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotGlobal {
    pub index: u32,
    /// `i32`, `i64`, `f32`, `f64` or `v128`.
    pub type_name: &'static str,
    pub mutable: bool,
    /// The export that lists it; None for a mutable global the module does not export.
    pub export: Option<String>,
}

/// The globals a snapshot of a canister running `wasm` (raw) lists, in the replica's order:
/// each export of a global in the export section's order, then every mutable global the
/// module does not export, by index. The replica's instrumentation exports the latter
/// (`export_mutable_globals`) and its embedder reads the instance's exported globals in
/// order (dfinity/ic rs/embedders/src/wasm_utils/instrumentation.rs and
/// wasmtime_embedder.rs `get_exported_globals`); a load sets only the mutable ones.
pub fn snapshot_globals(wasm: &[u8]) -> Result<Vec<SnapshotGlobal>> {
    use wasmparser::{ExternalKind, Payload, TypeRef, ValType};
    let mut types: Vec<(ValType, bool)> = Vec::new();
    let mut exported: Vec<(u32, String)> = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.context("invalid Wasm")? {
            Payload::ImportSection(section) => {
                for import in section.into_imports() {
                    if let TypeRef::Global(g) = import.context("invalid Wasm")?.ty {
                        types.push((g.content_type, g.mutable));
                    }
                }
            }
            Payload::GlobalSection(section) => {
                for global in section {
                    let ty = global.context("invalid Wasm")?.ty;
                    types.push((ty.content_type, ty.mutable));
                }
            }
            Payload::ExportSection(section) => {
                for export in section {
                    let export = export.context("invalid Wasm")?;
                    if export.kind == ExternalKind::Global {
                        exported.push((export.index, export.name.to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    let type_name = |index: u32| -> Result<(&'static str, bool)> {
        let Some(&(ty, mutable)) = types.get(index as usize) else {
            bail!("invalid Wasm: global {index} does not exist");
        };
        let name = match ty {
            ValType::I32 => "i32",
            ValType::I64 => "i64",
            ValType::F32 => "f32",
            ValType::F64 => "f64",
            ValType::V128 => "v128",
            ValType::Ref(_) => bail!("global {index} holds a reference, which no snapshot holds"),
        };
        Ok((name, mutable))
    };
    let mut out = Vec::new();
    for (index, name) in &exported {
        let (type_name, mutable) = type_name(*index)?;
        out.push(SnapshotGlobal {
            index: *index,
            type_name,
            mutable,
            export: Some(name.clone()),
        });
    }
    for index in 0..types.len() as u32 {
        let (type_name, mutable) = type_name(index)?;
        if mutable && !exported.iter().any(|(i, _)| *i == index) {
            out.push(SnapshotGlobal {
                index,
                type_name,
                mutable,
                export: None,
            });
        }
    }
    Ok(out)
}

/// The globals the embedded engine saves and restores, by index, in its order: the module's
/// exported mutable globals in export order, then every mutable global by index (the
/// instrumentation exports them all, `instrument::PERSISTENT_GLOBAL_PREFIX`, so an exported
/// one is there twice).
pub(crate) fn engine_globals(listed: &[SnapshotGlobal]) -> Vec<u32> {
    let mut order: Vec<u32> = listed
        .iter()
        .filter(|g| g.mutable && g.export.is_some())
        .map(|g| g.index)
        .collect();
    let mut all: Vec<u32> = listed
        .iter()
        .filter(|g| g.mutable)
        .map(|g| g.index)
        .collect();
    all.sort_unstable();
    all.dedup();
    order.extend(all);
    order
}

/// A memory's bytes in a file: its first `len` bytes (a multiple of 64 KiB). The file is
/// only read, never written: the engine maps the pages messages touch copy-on-write.
#[derive(Clone, Copy, Debug)]
pub struct MemoryFile<'a> {
    pub file: &'a File,
    pub len: u64,
}

/// What a snapshot records of a canister besides its module and its two memories.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemState {
    /// In the order [`snapshot_globals`] gives.
    pub globals: Vec<GlobalValue>,
    pub certified_data: Vec<u8>,
    /// The global timer's deadline (ns since the epoch); None: inactive.
    pub global_timer: Option<u64>,
    /// The clock: the next message sees one nanosecond more.
    pub time_ns: u64,
    pub canister_version: u64,
}

/// A canister's state in files, to load ([`crate::embedded::EmbeddedEngine::load_state_files`]).
#[derive(Clone, Debug)]
pub struct StateFiles<'a> {
    /// The module, raw or gzipped, as installed.
    pub wasm: &'a [u8],
    pub heap: MemoryFile<'a>,
    /// None: no stable memory.
    pub stable: Option<MemoryFile<'a>>,
    pub system: &'a SystemState,
    /// The canister's id, which a snapshot does not hold; None: the engine's first.
    pub canister_id: Option<candid::Principal>,
}

/// What [`crate::embedded::EmbeddedEngine::write_state_files`] wrote besides the two memories' files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenState {
    pub heap_bytes: u64,
    pub stable_bytes: u64,
    pub system: SystemState,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_are_the_exports_then_the_other_mutable_ones() {
        let wasm = wat::parse_str(
            r#"(module
                (global $a (mut i32) (i32.const 1))
                (global $b i64 (i64.const 2))
                (global $c (mut f64) (f64.const 3))
                (global $d f32 (f32.const 4))
                (global $e (mut i64) (i64.const 5))
                (export "e" (global $e))
                (export "b" (global $b)))"#,
        )
        .unwrap();
        let got: Vec<(u32, &str, bool)> = snapshot_globals(&wasm)
            .unwrap()
            .iter()
            .map(|g| (g.index, g.type_name, g.mutable))
            .collect();
        assert_eq!(
            got,
            [
                (4, "i64", true),
                (1, "i64", false),
                (0, "i32", true),
                (2, "f64", true)
            ]
        );
    }
}
