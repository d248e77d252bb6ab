//! `icbench replay` on big snapshots: a canister with a 4 GiB heap and 64 GiB of stable
//! memory (sparse files, 1 MiB of data every 256 MiB) replays one call that reads the
//! heap's last page and a stable page 60 GiB in; a dense 1 GiB heap replays 1,000 calls,
//! against the same 1,000 calls on the same canister with a one-page heap. Prints each
//! run's wall time and the replay process's peak resident memory (docs/performance.md).
//!
//! Run with `cargo bench --bench replay_big`. The snapshots are written under the system's
//! temporary directory and removed; their files are never written by the replay.

// getrusage(2): the replay process's peak resident memory.
#![allow(unsafe_code)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const GIB: u64 = 1 << 30;

/// `touch` reads 8 bytes of the heap's last page and 8 bytes of stable memory at
/// `STABLE_AT`, writes them to the heap's first page and replies `()`.
const WAT: &str = r#"(module
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "stable64_read" (func $read (param i64 i64 i64)))
  (import "ic0" "stable64_size" (func $size (result i64)))
  (memory 1)
  (data (i32.const 0) "DIDL\00\00")
  (func (export "canister_update touch")
    (i64.store (i32.const 64) (i64.load (i32.sub (i32.mul (memory.size) (i32.const 65536)) (i32.const 8))))
    (if (i64.gt_u (call $size) (i64.const 0))
      (then (call $read (i64.const 128) (i64.const STABLE_AT) (i64.const 8))))
    (call $append (i32.const 0) (i32.const 6))
    (call $reply)))"#;

/// Where `touch` reads stable memory: 60 GiB in, or 0 for a snapshot with less.
fn module(stable_at: u64) -> Vec<u8> {
    wat::parse_str(WAT.replace("STABLE_AT", &stable_at.to_string())).unwrap()
}

/// A snapshot directory of `touch`'s canister: a heap of `heap` bytes and `stable` bytes of
/// stable memory, holding 1 MiB of data every `stride` bytes (1 MiB: dense, as a download
/// is; more: sparse).
fn snapshot(dir: &Path, heap: u64, stable: u64, stable_at: u64, stride: u64) {
    use std::io::{Seek, SeekFrom, Write};
    std::fs::create_dir_all(dir).unwrap();
    let wasm = module(stable_at);
    std::fs::write(dir.join("wasm_module.bin"), &wasm).unwrap();
    for (name, len) in [("wasm_memory.bin", heap), ("stable_memory.bin", stable)] {
        if len == 0 {
            continue;
        }
        let mut f = std::fs::File::create(dir.join(name)).unwrap();
        f.set_len(len).unwrap();
        let mut at = 0;
        while at < len {
            f.seek(SeekFrom::Start(at)).unwrap();
            let data: Vec<u8> = (0..(1u64 << 20).min(len - at))
                .map(|i| (i % 251) as u8 + 1)
                .collect();
            f.write_all(&data).unwrap();
            at += stride;
        }
    }
    // The heap's first bytes are the reply's.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("wasm_memory.bin"))
        .unwrap();
    f.write_all(b"DIDL\x00\x00").unwrap();
    let metadata = format!(
        r#"{{
  "source": {{
    "taken_from_canister": null
  }},
  "taken_at_timestamp": 1767225600000000000,
  "wasm_module_size": {},
  "globals": [],
  "wasm_memory_size": {heap},
  "stable_memory_size": {stable},
  "wasm_chunk_store": [],
  "canister_version": 1,
  "certified_data": [],
  "global_timer": "inactive",
  "on_low_wasm_memory_hook_status": "condition_not_satisfied"
}}"#,
        wasm.len()
    );
    std::fs::write(dir.join("metadata.json"), metadata).unwrap();
}

/// Runs `icbench replay` with `args`: its wall time and the peak resident memory of the
/// process (the largest of the children waited for so far: each run is larger than the last).
fn replay(args: &[&str]) -> (f64, u64) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_icbench"))
        .arg("replay")
        .args(args)
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    (wall, usage.ru_maxrss as u64 * 1024)
}

fn main() {
    let root = std::env::temp_dir().join(format!("icbench-replay-big-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let mb = |b: u64| b as f64 / 1e6;

    let small = root.join("small");
    snapshot(&small, 65536, 0, 0, 1 << 20);
    let (wall, rss) = replay(&[small.to_str().unwrap(), "--call", "1000 x touch"]);
    println!(
        "1,000 calls, 64 KiB heap:          {wall:.2} s, peak RSS {:.0} MB",
        mb(rss)
    );

    let big = root.join("big");
    snapshot(&big, 4 * GIB, 64 * GIB, 60 * GIB, 256 << 20);
    let (wall, rss) = replay(&[big.to_str().unwrap(), "--call", "touch"]);
    println!(
        "1 call, 4 GiB heap + 64 GiB stable: {wall:.2} s, peak RSS {:.0} MB",
        mb(rss)
    );
    std::fs::remove_dir_all(&big).unwrap();

    let gib = root.join("gib");
    snapshot(&gib, GIB, 0, 0, 1 << 20);
    let (wall, rss) = replay(&[gib.to_str().unwrap(), "--call", "1000 x touch"]);
    println!(
        "1,000 calls, 1 GiB dense heap:      {wall:.2} s, peak RSS {:.0} MB",
        mb(rss)
    );
    std::fs::remove_dir_all(&root).unwrap();
}
