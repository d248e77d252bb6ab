//! A downloaded canister snapshot's directory, as `dfx canister snapshot download` (0.29.2
//! on), `icp canister snapshot download` and PocketIC's `canister_snapshot_download` write
//! it: `metadata.json` (the management canister's `read_canister_snapshot_metadata` reply,
//! serde_json's pretty print of ic-management-canister-types'
//! `ReadCanisterSnapshotMetadataResult`), `wasm_module.bin`, `wasm_memory.bin`,
//! `stable_memory.bin` (absent or empty when the size is 0) and `wasm_chunk_store/<hex>.bin`.
//! Read, checked file by file before any work, and written back in the same shape.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::engine::state_files::{GlobalValue, SystemState, WrittenState};

pub const METADATA: &str = "metadata.json";
pub const WASM_MODULE: &str = "wasm_module.bin";
pub const WASM_MEMORY: &str = "wasm_memory.bin";
pub const STABLE_MEMORY: &str = "stable_memory.bin";
pub const CHUNK_STORE: &str = "wasm_chunk_store";

/// metadata.json's fields in dfx's order (ic-management-canister-types 0.5 on; 0.4.1, dfx
/// 0.29.2 to 0.30, writes the same JSON with no `null` global and a `source` always set).
#[derive(Clone, Debug, PartialEq, Deserialize)]
struct Metadata {
    /// `{"taken_from_canister": null}`, `{"metadata_upload": null}` or null: carried as read.
    #[serde(default)]
    source: serde_json::Value,
    taken_at_timestamp: u64,
    wasm_module_size: u64,
    /// dfx 0.29.0 and 0.29.1 called it `exported_globals`. Read as JSON first, so that a
    /// global dfx could not write (`{"f32": null}`: a NaN) is named.
    #[serde(alias = "exported_globals")]
    globals: Vec<serde_json::Value>,
    wasm_memory_size: u64,
    stable_memory_size: u64,
    #[serde(default)]
    wasm_chunk_store: Vec<ChunkHash>,
    #[serde(default)]
    canister_version: u64,
    #[serde(default)]
    certified_data: Vec<u8>,
    #[serde(default)]
    global_timer: Option<Timer>,
    #[serde(default)]
    on_low_wasm_memory_hook_status: Option<HookStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ChunkHash {
    hash: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Timer {
    Inactive,
    Active(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HookStatus {
    ConditionNotSatisfied,
    Ready,
    Executed,
}

/// A global as metadata.json writes it: `{"i32": 5}`; `v128` as the u32 digits of a
/// candid `nat`, least significant first, trailing zeros trimmed (num-bigint's serde).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[allow(non_camel_case_types)]
enum JsonGlobal {
    i32(i32),
    i64(i64),
    f32(f32),
    f64(f64),
    v128(Vec<u32>),
}

/// A snapshot directory, read and checked.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub dir: PathBuf,
    metadata: Metadata,
    /// The module as installed (raw or gzipped).
    pub wasm: Vec<u8>,
    /// Its globals, certified data, timer, clock and version, from metadata.json.
    pub system: SystemState,
    /// Whether `stable_memory.bin` was there though the size is 0 (icp-cli writes it empty).
    empty_stable_file: bool,
}

impl Snapshot {
    /// Reads `dir`; every problem is an error naming the file.
    pub fn read(dir: &Path) -> Result<Snapshot> {
        if !dir.is_dir() {
            bail!("{}: not a directory (a snapshot downloaded with `dfx canister snapshot download --dir`)", dir.display());
        }
        let path = dir.join(METADATA);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            anyhow!(
                "{}: {e} (a downloaded snapshot has metadata.json)",
                path.display()
            )
        })?;
        let metadata: Metadata = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{}: not a snapshot's metadata: {e}", path.display()))?;
        let globals = metadata
            .globals
            .iter()
            .enumerate()
            .map(|(i, g)| global_of(g).map_err(|e| anyhow!("{}: global {i}: {e}", path.display())))
            .collect::<Result<Vec<_>>>()?;
        let wasm = read_sized(dir, WASM_MODULE, metadata.wasm_module_size)?;
        if wasm.is_empty() {
            bail!(
                "{}: empty: the snapshot is of a canister with no module",
                dir.join(WASM_MODULE).display()
            );
        }
        check_size(dir, WASM_MEMORY, metadata.wasm_memory_size, true)?;
        let stable = dir.join(STABLE_MEMORY);
        let empty_stable_file = metadata.stable_memory_size == 0 && stable.exists();
        check_size(
            dir,
            STABLE_MEMORY,
            metadata.stable_memory_size,
            metadata.stable_memory_size > 0,
        )?;
        for chunk in &metadata.wasm_chunk_store {
            let name = format!("{}/{}.bin", CHUNK_STORE, hex::encode(&chunk.hash));
            if !dir.join(&name).is_file() {
                bail!(
                    "{}: missing: metadata.json lists the chunk",
                    dir.join(name).display()
                );
            }
        }
        let system = SystemState {
            globals,
            certified_data: metadata.certified_data.clone(),
            global_timer: match metadata.global_timer {
                Some(Timer::Active(t)) => Some(t),
                _ => None,
            },
            time_ns: metadata.taken_at_timestamp,
            canister_version: metadata.canister_version,
        };
        Ok(Snapshot {
            dir: dir.to_path_buf(),
            metadata,
            wasm,
            system,
            empty_stable_file,
        })
    }

    /// A snapshot of a canister made here (`--wasm`), before any state is written: the
    /// shape dfx 0.31 writes.
    pub fn fresh(wasm: &[u8]) -> Snapshot {
        Snapshot {
            dir: PathBuf::new(),
            metadata: Metadata {
                source: serde_json::json!({ "taken_from_canister": null }),
                taken_at_timestamp: 0,
                wasm_module_size: wasm.len() as u64,
                globals: Vec::new(),
                wasm_memory_size: 0,
                stable_memory_size: 0,
                wasm_chunk_store: Vec::new(),
                canister_version: 0,
                certified_data: Vec::new(),
                global_timer: Some(Timer::Inactive),
                on_low_wasm_memory_hook_status: Some(HookStatus::ConditionNotSatisfied),
            },
            wasm: wasm.to_vec(),
            system: SystemState::default(),
            empty_stable_file: false,
        }
    }

    pub fn heap_path(&self) -> PathBuf {
        self.dir.join(WASM_MEMORY)
    }

    pub fn heap_bytes(&self) -> u64 {
        self.metadata.wasm_memory_size
    }

    /// The stable memory's file, when it holds any.
    pub fn stable_path(&self) -> Option<PathBuf> {
        (self.metadata.stable_memory_size > 0).then(|| self.dir.join(STABLE_MEMORY))
    }

    pub fn stable_bytes(&self) -> u64 {
        self.metadata.stable_memory_size
    }

    /// Writes the state `state` of a canister running `wasm` into `dir` (which must not
    /// exist or be empty) in this snapshot's shape: what the canister holds now, the
    /// rest (source, hook status, chunk store) as read.
    pub fn write(
        &self,
        dir: &Path,
        wasm: &[u8],
        state: &WrittenState,
        heap: &Path,
        stable: &Path,
    ) -> Result<()> {
        let mut metadata = self.metadata.clone();
        let system = &state.system;
        metadata.taken_at_timestamp = system.time_ns;
        metadata.wasm_module_size = wasm.len() as u64;
        metadata.wasm_memory_size = state.heap_bytes;
        metadata.stable_memory_size = state.stable_bytes;
        metadata.canister_version = system.canister_version;
        metadata.certified_data = system.certified_data.clone();
        if metadata.global_timer.is_some() || system.global_timer.is_some() {
            metadata.global_timer = Some(match system.global_timer {
                Some(t) => Timer::Active(t),
                None => Timer::Inactive,
            });
        }
        std::fs::write(dir.join(METADATA), pretty(&metadata, &system.globals)?)?;
        std::fs::write(dir.join(WASM_MODULE), wasm)?;
        std::fs::rename(heap, dir.join(WASM_MEMORY))?;
        if state.stable_bytes > 0 || self.empty_stable_file {
            std::fs::rename(stable, dir.join(STABLE_MEMORY))?;
        }
        if !self.metadata.wasm_chunk_store.is_empty() {
            std::fs::create_dir_all(dir.join(CHUNK_STORE))?;
            for chunk in &self.metadata.wasm_chunk_store {
                let name = format!("{}.bin", hex::encode(&chunk.hash));
                std::fs::copy(
                    self.dir.join(CHUNK_STORE).join(&name),
                    dir.join(CHUNK_STORE).join(&name),
                )?;
            }
        }
        Ok(())
    }
}

/// metadata.json as dfx prints it, with `globals`: typed, so that an f32 prints as an f32
/// (serde_json's `Value` would widen it).
fn pretty(metadata: &Metadata, globals: &[GlobalValue]) -> Result<String> {
    #[derive(Serialize)]
    struct Typed<'a> {
        source: &'a serde_json::Value,
        taken_at_timestamp: u64,
        wasm_module_size: u64,
        globals: Vec<Option<JsonGlobal>>,
        wasm_memory_size: u64,
        stable_memory_size: u64,
        wasm_chunk_store: &'a [ChunkHash],
        canister_version: u64,
        certified_data: &'a [u8],
        global_timer: Option<Timer>,
        on_low_wasm_memory_hook_status: Option<HookStatus>,
    }
    let m = metadata;
    Ok(serde_json::to_string_pretty(&Typed {
        source: &m.source,
        taken_at_timestamp: m.taken_at_timestamp,
        wasm_module_size: m.wasm_module_size,
        globals: globals.iter().map(|g| Some(json_global(*g))).collect(),
        wasm_memory_size: m.wasm_memory_size,
        stable_memory_size: m.stable_memory_size,
        wasm_chunk_store: &m.wasm_chunk_store,
        canister_version: m.canister_version,
        certified_data: &m.certified_data,
        global_timer: m.global_timer,
        on_low_wasm_memory_hook_status: m.on_low_wasm_memory_hook_status,
    })?)
}

fn json_global(g: GlobalValue) -> JsonGlobal {
    match g {
        GlobalValue::I32(v) => JsonGlobal::i32(v),
        GlobalValue::I64(v) => JsonGlobal::i64(v),
        GlobalValue::F32(bits) => JsonGlobal::f32(f32::from_bits(bits)),
        GlobalValue::F64(bits) => JsonGlobal::f64(f64::from_bits(bits)),
        GlobalValue::V128(v) => {
            let mut digits: Vec<u32> = (0..4).map(|i| (v >> (32 * i)) as u32).collect();
            while digits.last() == Some(&0) {
                digits.pop();
            }
            JsonGlobal::v128(digits)
        }
    }
}

/// One entry of metadata.json's `globals`.
fn global_of(g: &serde_json::Value) -> Result<GlobalValue> {
    let obj = match g {
        serde_json::Value::Object(obj) if obj.len() == 1 => obj,
        serde_json::Value::Null => {
            bail!("null: a global of a type this snapshot's writer did not know")
        }
        other => bail!("{other} is not a global (`{{\"i32\": 5}}` and the like)"),
    };
    let (ty, v) = obj.iter().next().expect("one entry");
    let nan =
        || anyhow!("{ty} written as null: a NaN or an infinity, which metadata.json cannot hold");
    Ok(match ty.as_str() {
        "i32" => GlobalValue::I32(
            v.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| anyhow!("{v} is not an i32"))?,
        ),
        "i64" => GlobalValue::I64(v.as_i64().ok_or_else(|| anyhow!("{v} is not an i64"))?),
        "f32" if v.is_null() => return Err(nan()),
        "f64" if v.is_null() => return Err(nan()),
        "f32" => GlobalValue::F32(
            (v.as_f64().ok_or_else(|| anyhow!("{v} is not an f32"))? as f32).to_bits(),
        ),
        "f64" => GlobalValue::F64(
            v.as_f64()
                .ok_or_else(|| anyhow!("{v} is not an f64"))?
                .to_bits(),
        ),
        "v128" => {
            let digits = v
                .as_array()
                .ok_or_else(|| anyhow!("v128 {v} is not a list of u32 digits"))?;
            if digits.len() > 4 {
                bail!("v128 {v} has more than 128 bits");
            }
            let mut n: u128 = 0;
            for (i, d) in digits.iter().enumerate() {
                let d = d
                    .as_u64()
                    .filter(|&d| d <= u32::MAX as u64)
                    .ok_or_else(|| anyhow!("v128 digit {d} is not a u32"))?;
                n |= (d as u128) << (32 * i);
            }
            GlobalValue::V128(n)
        }
        other => bail!("unknown global type {other}"),
    })
}

fn read_sized(dir: &Path, name: &str, size: u64) -> Result<Vec<u8>> {
    check_size(dir, name, size, true)?;
    let path = dir.join(name);
    std::fs::read(&path).with_context(|| path.display().to_string())
}

/// The file `name` must hold `size` bytes, as metadata.json says (absent only where not
/// `required`, for a size of 0).
fn check_size(dir: &Path, name: &str, size: u64, required: bool) -> Result<()> {
    let path = dir.join(name);
    match std::fs::metadata(&path) {
        Ok(m) if m.len() == size => Ok(()),
        Ok(m) => bail!(
            "{}: {} bytes, but metadata.json says {size}: a download that did not finish (`--resume` it)?",
            path.display(),
            m.len()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(()),
        Err(e) => bail!("{}: {e}", path.display()),
    }
}
