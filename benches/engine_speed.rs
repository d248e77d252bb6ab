//! How much speed the replica's instruction metering costs: each workload runs once as
//! plain wasmtime (default config, raw module, its exported `work` function called
//! directly) and once as an update method of a canister on the embedded engine
//! (instrumented, metered, dirty pages tracked). Same module, same function body, same work;
//! the two results are compared.
//!
//! Run with `cargo bench --bench engine_speed`. Reports the best of 5 timed runs after one
//! warm-up (plain and metered runs alternate, so both see the same machine load), the
//! metered instruction count, the speed ratio (plain time / metered time; the target is
//! at least 0.67, i.e. metered at least 2/3 of plain speed), metered instructions per second,
//! and the ratio with the replica's own counter code. Expect noise of ±20% between
//! processes on a shared 2-core machine (JIT code layout, other builds): compare ratios over
//! a few runs.

use std::time::{Duration, Instant};

use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::Counter;
use icbench::engine::Engine;

/// Timed runs per side; `ENGINE_SPEED_RUNS` overrides.
const RUNS: usize = 5;
const TARGET_RATIO: f64 = 0.67;

/// Every workload module: `$work: () -> i64` is exported as `work` for the plain run and
/// wrapped in `canister_update run` (store the result, reply it as 8 bytes) for the engine.
fn module(memory_pages: u32, body: &str) -> Vec<u8> {
    let text = format!(
        r#"(module
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (memory (export "memory") {pages})
          {body}
          (func (export "canister_update run")
            (i64.store (i32.const {scratch}) (call $work))
            (call $append (i32.const {scratch}) (i32.const 8))
            (call $reply)))"#,
        pages = memory_pages + 1,
        scratch = memory_pages * 65536,
    );
    wat::parse_str(text).expect("workload WAT is valid")
}

struct Workload {
    name: &'static str,
    what: &'static str,
    wasm: Vec<u8>,
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "checksum",
            what: "FNV-style hash + store over 64 KiB, 1000 rounds",
            wasm: module(
                1,
                r#"(func $work (export "work") (result i64)
                  (local $i i32) (local $r i32) (local $h i32) (local $x i32)
                  (loop $fill
                    (i32.store (local.get $i) (i32.mul (local.get $i) (i32.const 0x9e3779b1)))
                    (local.set $i (i32.add (local.get $i) (i32.const 4)))
                    (br_if $fill (i32.lt_u (local.get $i) (i32.const 65536))))
                  (local.set $h (i32.const 0x811c9dc5))
                  (local.set $r (i32.const 1000))
                  (loop $round
                    (local.set $i (i32.const 0))
                    (loop $inner
                      (local.set $x (i32.load (local.get $i)))
                      (local.set $h (i32.mul (i32.rotl (i32.xor (local.get $h) (local.get $x)) (i32.const 5))
                                             (i32.const 0x01000193)))
                      (i32.store (local.get $i) (i32.add (local.get $x) (local.get $h)))
                      (local.set $i (i32.add (local.get $i) (i32.const 4)))
                      (br_if $inner (i32.lt_u (local.get $i) (i32.const 65536))))
                    (local.set $r (i32.sub (local.get $r) (i32.const 1)))
                    (br_if $round (local.get $r)))
                  (i64.extend_i32_u (local.get $h)))"#,
            ),
        },
        Workload {
            name: "fib",
            what: "recursive fib(32), i64",
            wasm: module(
                1,
                r#"(func $fib (param $n i64) (result i64)
                  (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
                    (then (local.get $n))
                    (else (i64.add (call $fib (i64.sub (local.get $n) (i64.const 1)))
                                   (call $fib (i64.sub (local.get $n) (i64.const 2)))))))
                (func $work (export "work") (result i64) (call $fib (i64.const 32)))"#,
            ),
        },
        Workload {
            name: "memcpy",
            what: "memory.copy 512 KiB back and forth, 500 rounds",
            wasm: module(
                16,
                r#"(func $work (export "work") (result i64)
                  (local $i i32) (local $r i32)
                  (loop $fill
                    (i32.store (local.get $i) (local.get $i))
                    (local.set $i (i32.add (local.get $i) (i32.const 4096)))
                    (br_if $fill (i32.lt_u (local.get $i) (i32.const 524288))))
                  (local.set $r (i32.const 500))
                  (loop $round
                    (memory.copy (i32.const 524288) (i32.const 0) (i32.const 524288))
                    (i32.store (i32.const 0) (i32.add (i32.load (i32.const 524292)) (local.get $r)))
                    (memory.copy (i32.const 4) (i32.const 524288) (i32.const 524284))
                    (local.set $r (i32.sub (local.get $r) (i32.const 1)))
                    (br_if $round (local.get $r)))
                  (i64.load (i32.const 0)))"#,
            ),
        },
        Workload {
            name: "sieve",
            what: "byte sieve of Eratosthenes below 65536, 100 rounds",
            wasm: module(
                1,
                r#"(func $work (export "work") (result i64)
                  (local $r i32) (local $i i32) (local $j i32) (local $count i32)
                  (local.set $r (i32.const 100))
                  (loop $round
                    (memory.fill (i32.const 0) (i32.const 1) (i32.const 65536))
                    (local.set $count (i32.const 0))
                    (local.set $i (i32.const 2))
                    (loop $outer
                      (if (i32.load8_u (local.get $i))
                        (then
                          (local.set $count (i32.add (local.get $count) (i32.const 1)))
                          (local.set $j (i32.mul (local.get $i) (local.get $i)))
                          (block $done
                            (loop $mark
                              (br_if $done (i32.ge_u (local.get $j) (i32.const 65536)))
                              (i32.store8 (local.get $j) (i32.const 0))
                              (local.set $j (i32.add (local.get $j) (local.get $i)))
                              (br $mark)))))
                      (local.set $i (i32.add (local.get $i) (i32.const 1)))
                      (br_if $outer (i32.lt_u (local.get $i) (i32.const 65536))))
                    (local.set $r (i32.sub (local.get $r) (i32.const 1)))
                    (br_if $round (local.get $r)))
                  (i64.extend_i32_u (local.get $count)))"#,
            ),
        },
    ]
}

/// Plain wasmtime: default engine, the raw module, no-op stubs for the two imports.
struct Plain {
    store: wasmtime::Store<()>,
    work: wasmtime::TypedFunc<(), i64>,
}

impl Plain {
    fn new(wasm: &[u8]) -> Self {
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, wasm).expect("workload compiles");
        let mut linker: wasmtime::Linker<()> = wasmtime::Linker::new(&engine);
        linker
            .func_wrap("ic0", "msg_reply_data_append", |_: i32, _: i32| {})
            .unwrap();
        linker.func_wrap("ic0", "msg_reply", || {}).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = linker
            .instantiate(&mut store, &module)
            .expect("workload instantiates");
        let work = instance
            .get_typed_func::<(), i64>(&mut store, "work")
            .expect("work: () -> i64");
        Plain { store, work }
    }

    fn run(&mut self) -> i64 {
        self.work
            .call(&mut self.store, ())
            .expect("plain run succeeds")
    }
}

/// The embedded engine: the same module as a canister, `run` as an update call.
struct Metered {
    engine: EmbeddedEngine,
    id: candid::Principal,
}

impl Metered {
    fn new(wasm: &[u8], counter: Counter) -> Self {
        let mut engine = EmbeddedEngine::new(Limits::BENCHMARKING).with_counter(counter);
        let (id, install) = engine.install(wasm, &[]).expect("workload installs");
        install.result.expect("install succeeds");
        Metered { engine, id }
    }

    /// The result and the message's metered instructions.
    fn run(&mut self) -> (i64, u64) {
        let out = self
            .engine
            .update(self.id, "run", &[])
            .expect("engine accepts the call");
        let reply = out.result.expect("run replies");
        (
            i64::from_le_bytes(reply.as_slice().try_into().expect("8-byte reply")),
            out.report.instructions,
        )
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

fn main() {
    // `cargo bench` passes `--bench`; there are no options to parse.
    let runs = std::env::var("ENGINE_SPEED_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(RUNS);
    println!("engine_speed: plain wasmtime vs the embedded engine (instrumented + metered), best of {runs} after a warm-up\n");
    for w in workloads() {
        println!("  {:<9} {}", w.name, w.what);
    }
    println!();
    println!(
        "{:<9} | {:>10} | {:>11} | {:>6} | {:>15} | {:>16} | {:>14} | target >= {TARGET_RATIO}",
        "workload",
        "plain ms",
        "metered ms",
        "ratio",
        "metered instr",
        "metered instr/s",
        "replica code *",
    );
    println!("{}", "-".repeat(116));
    let mut below = Vec::new();
    for w in workloads() {
        let mut plain = Plain::new(&w.wasm);
        let mut metered = Metered::new(&w.wasm, Counter::Local);
        let mut replica_code = Metered::new(&w.wasm, Counter::Global);
        // One warm-up each, then alternate plain and metered runs so that both see the same
        // machine load (other builds share these cores); keep the best of each.
        let (mut plain_value, (mut metered_value, mut instructions)) = (plain.run(), metered.run());
        replica_code.run();
        let (mut plain_time, mut metered_time) = (Duration::MAX, Duration::MAX);
        let mut replica_time = Duration::MAX;
        for _ in 0..runs {
            let (t, v) = timed(|| plain.run());
            plain_time = plain_time.min(t);
            plain_value = v;
            let (t, (v, n)) = timed(|| metered.run());
            metered_time = metered_time.min(t);
            (metered_value, instructions) = (v, n);
            let (t, (v, n)) = timed(|| replica_code.run());
            replica_time = replica_time.min(t);
            assert_eq!(
                (v, n),
                (metered_value, instructions),
                "{}: the replica's counter code gives another result",
                w.name
            );
        }
        assert_eq!(
            plain_value, metered_value,
            "{}: plain and metered runs computed different results",
            w.name
        );
        let ratio = plain_time.as_secs_f64() / metered_time.as_secs_f64();
        let per_second = instructions as f64 / metered_time.as_secs_f64();
        let ok = ratio >= TARGET_RATIO;
        if !ok {
            below.push(w.name);
        }
        println!(
            "{:<9} | {:>10.2} | {:>11.2} | {:>6.3} | {:>15} | {:>16} | {:>14.3} | {}",
            w.name,
            plain_time.as_secs_f64() * 1e3,
            metered_time.as_secs_f64() * 1e3,
            ratio,
            instructions,
            format!("{:.3e}", per_second),
            plain_time.as_secs_f64() / replica_time.as_secs_f64(),
            if ok { "ok" } else { "BELOW" }
        );
    }
    println!();
    println!("* ratio with the replica's own counter code (Counter::Global): same counts, slower");
    if below.is_empty() {
        println!("all workloads meet the target: metered speed >= {TARGET_RATIO} x plain");
    } else {
        println!(
            "below the target ({TARGET_RATIO} x plain speed): {}",
            below.join(", ")
        );
    }
}
