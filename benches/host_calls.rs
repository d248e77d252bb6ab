//! What one System API call costs on the embedded engine: a loop of 20,000,000
//! `ic0.stable64_read` or `stable64_write` calls run as one update message (instrumented,
//! metered, pages tracked), against the same loop on plain wasmtime calling a host function
//! that does nothing (wasmtime's own cost of a host call). A StableBTreeMap's fill makes
//! about 178 such calls per row (docs/engine.md, "Stable memory accessed from Wasm").
//!
//! Run with `cargo bench --bench host_calls`; `ONLY=<name prefix>` runs one workload.
//! Wall time of one timed run each, after a warm-up run; expect a few ns of noise.

use std::time::Instant;

use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::Engine;

#[path = "shared/plain_wasmtime.rs"]
mod plain_wasmtime;

const CALLS: i64 = 20_000_000;

/// A canister whose `run` update loops `CALLS` times over `body` (which sees the loop
/// index in `$i`). Its stable memory is one Wasm page, written once at init so that its
/// pages are stored, as a filled canister's are.
fn canister(body: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (import "ic0" "stable64_read" (func $read (param i64 i64 i64)))
          (import "ic0" "stable64_write" (func $write (param i64 i64 i64)))
          (import "ic0" "stable64_grow" (func $grow (param i64) (result i64)))
          (memory (export "memory") 2)
          (func $work (export "work") (result i64) (local $i i64)
            (loop $next
              {body}
              (local.set $i (i64.add (local.get $i) (i64.const 1)))
              (br_if $next (i64.lt_u (local.get $i) (i64.const {CALLS}))))
            (local.get $i))
          (func (export "canister_init")
            (drop (call $grow (i64.const 1)))
            (call $write (i64.const 0) (i64.const 0) (i64.const 65536)))
          (func (export "canister_update run")
            (i64.store (i32.const 65536) (call $work))
            (call $append (i32.const 65536) (i32.const 8))
            (call $reply)))"#
    ))
    .expect("the workload's WAT is valid")
}

const WORKLOADS: &[(&str, &str)] = &[
    ("no call", ""),
    (
        "stable64_read, 8 bytes",
        "(call $read (i64.const 0) (i64.and (i64.mul (local.get $i) (i64.const 8)) (i64.const 65535)) (i64.const 8))",
    ),
    (
        "stable64_write, 8 bytes",
        "(call $write (i64.and (i64.mul (local.get $i) (i64.const 8)) (i64.const 65535)) (i64.const 0) (i64.const 8))",
    ),
    (
        "stable64_read, 100 bytes, a new page each call",
        "(call $read (i64.const 0) (i64.rem_u (i64.mul (local.get $i) (i64.const 4000)) (i64.const 65400)) (i64.const 100))",
    ),
];

/// ns per iteration of `work` on plain wasmtime, its imports doing nothing.
fn plain_ns(wasm: &[u8]) -> f64 {
    let engine = wasmtime::Engine::default();
    let (mut store, work) = plain_wasmtime::instantiate_work(&engine, wasm, |linker| {
        let ok = "a no-op import links";
        for name in ["stable64_read", "stable64_write"] {
            linker
                .func_wrap("ic0", name, |_: i64, _: i64, _: i64| {})
                .expect(ok);
        }
        linker
            .func_wrap("ic0", "stable64_grow", |_: i64| 0i64)
            .expect(ok);
    });
    work.call(&mut store, ()).expect("the warm-up runs");
    let start = Instant::now();
    work.call(&mut store, ()).expect("the timed run runs");
    start.elapsed().as_secs_f64() * 1e9 / CALLS as f64
}

/// ns per iteration of `run` as an update on the embedded engine, and its instructions.
fn metered_ns(wasm: &[u8]) -> (f64, u64) {
    let mut engine = EmbeddedEngine::new(Limits::BENCHMARKING);
    let (id, install) = engine.install(wasm, &[]).expect("the workload installs");
    install.result.expect("canister_init succeeds");
    let run = |engine: &mut EmbeddedEngine| {
        let out = engine.update(id, "run", &[]).expect("the engine runs it");
        out.result.expect("run replies");
        out.report.instructions
    };
    run(&mut engine);
    let start = Instant::now();
    let instructions = run(&mut engine);
    (
        start.elapsed().as_secs_f64() * 1e9 / CALLS as f64,
        instructions,
    )
}

fn main() {
    let only = std::env::var("ONLY").ok();
    println!("ns per iteration of a loop of {CALLS} calls");
    println!(
        "{:<48} | {:>16} | {:>14} | metered instructions",
        "workload", "plain, no-op ns", "metered ns"
    );
    for (name, body) in WORKLOADS {
        if only.as_ref().is_some_and(|o| !name.starts_with(o.as_str())) {
            continue;
        }
        let wasm = canister(body);
        let plain = plain_ns(&wasm);
        let (metered, instructions) = metered_ns(&wasm);
        println!("{name:<48} | {plain:>16.1} | {metered:>14.1} | {instructions}");
    }
}
