//! How much speed the replica's instruction metering costs: each workload runs once as
//! plain wasmtime (default config, raw module, its exported `work` function called
//! directly) and once as an update method of a canister on the embedded engine
//! (instrumented, metered, dirty pages tracked). Same module, same function body, same work;
//! the two results are compared.
//!
//! `bench-canister-btree-insert` is the bench canister itself (target/canister/bench.wasm,
//! built if missing or stale) inserting rows into its StableBTreeMap with
//! `add_users_btree`: plain wasmtime runs the uninstrumented module on the engine's own
//! System API host functions (stable memory included, without metering), the engine runs
//! it as an installed canister. Every timed run inserts the next block of ids, the same on
//! both sides; its target is a ratio of at least 0.8.
//!
//! Besides the table, the results go to `target/engine_speed.json`:
//! `{"workloads": [{"name", "plain_ms", "metered_ms", "ratio"}, ...]}`.
//!
//! Run with `cargo bench --bench engine_speed`
//! (`ENGINE_SPEED_WORKLOADS=bench-canister-btree-insert` for one workload,
//! `ICBENCH_PERF_MAP=1` to name every engine's compiled functions for `perf`,
//! `ENGINE_SPEED_SIDE=metered` to run the metered side of the bench canister's workload
//! alone, so that `perf` sees it only: it prints the total only). Times are
//! the process's CPU time (so that other processes on a shared machine do not count). Reports the best of 5 timed runs after one
//! warm-up (plain and metered runs alternate, so both see the same machine load), the
//! metered instruction count, the speed ratio (plain time / metered time; the target is
//! at least 0.67, i.e. metered at least 2/3 of plain speed), metered instructions per second,
//! and the ratio with the replica's own counter code. Expect noise of ±20% between
//! processes on a shared 2-core machine (JIT code layout, other builds): compare ratios over
//! a few runs.

use std::time::Duration;

#[path = "shared/plain_wasmtime.rs"]
mod plain_wasmtime;

use candid::{Decode, Encode};
use icbench::engine::cost::Limits;
use icbench::engine::counter_reads::CounterReads;
use icbench::engine::embedded::memory::charges::Tracker;
use icbench::engine::embedded::memory::stable::{StableImage, StableMemory};
use icbench::engine::embedded::system_api::{
    self, ApiType, HostState, Message, Response, MAX_STABLE_BYTES,
};
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

/// The workloads: name, what it does, its memory in 64 KiB pages, and its `$work` (see
/// [`module`]).
const WORKLOADS: [(&str, &str, u32, &str); 4] = [
    (
        "checksum",
        "FNV-style hash + store over 64 KiB, 1000 rounds",
        1,
        CHECKSUM,
    ),
    ("fib", "recursive fib(32), i64", 1, FIB),
    (
        "memcpy",
        "memory.copy 512 KiB back and forth, 500 rounds",
        16,
        MEMCPY,
    ),
    (
        "sieve",
        "byte sieve of Eratosthenes below 65536, 100 rounds",
        1,
        SIEVE,
    ),
];

fn workloads() -> Vec<Workload> {
    WORKLOADS
        .iter()
        .map(|&(name, what, pages, body)| Workload {
            name,
            what,
            wasm: module(pages, body),
        })
        .collect()
}

const CHECKSUM: &str = r#"(func $work (export "work") (result i64)
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
    (i64.extend_i32_u (local.get $h)))"#;

const FIB: &str = r#"(func $fib (param $n i64) (result i64)
    (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
      (then (local.get $n))
      (else (i64.add (call $fib (i64.sub (local.get $n) (i64.const 1)))
                     (call $fib (i64.sub (local.get $n) (i64.const 2)))))))
(func $work (export "work") (result i64) (call $fib (i64.const 32)))"#;

const MEMCPY: &str = r#"(func $work (export "work") (result i64)
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
    (i64.load (i32.const 0)))"#;

const SIEVE: &str = r#"(func $work (export "work") (result i64)
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
    (i64.extend_i32_u (local.get $count)))"#;

/// Plain wasmtime: default engine, the raw module, no-op stubs for the two imports.
struct Plain {
    store: wasmtime::Store<()>,
    work: wasmtime::TypedFunc<(), i64>,
}

impl Plain {
    fn new(wasm: &[u8]) -> Self {
        let mut config = wasmtime::Config::new();
        icbench::engine::embedded::perf_map_if_asked(&mut config);
        let engine = wasmtime::Engine::new(&config).expect("plain wasmtime config");
        let (store, work) = plain_wasmtime::instantiate_work(&engine, wasm, |_| {});
        Plain { store, work }
    }

    fn run(&mut self) -> i64 {
        self.work
            .call(&mut self.store, ())
            .expect("plain run succeeds")
    }
}

/// The embedded engine with one module installed as a canister: a workload whose `run`
/// is an update call, or the bench canister.
struct Metered {
    engine: EmbeddedEngine,
    id: candid::Principal,
}

impl Metered {
    fn new(wasm: &[u8], init_arg: &[u8], counter: Counter) -> Self {
        let mut engine = EmbeddedEngine::new(Limits::BENCHMARKING).with_counter(counter);
        let (id, install) = engine.install(wasm, init_arg).expect("the module installs");
        install.result.expect("install succeeds");
        Metered { engine, id }
    }

    /// The reply of an update call and its metered instructions.
    fn update(&mut self, method: &str, arg: &[u8]) -> (Vec<u8>, u64) {
        let out = self
            .engine
            .update(self.id, method, arg)
            .expect("engine accepts the call");
        let reply = out
            .result
            .unwrap_or_else(|r| panic!("{method} does not reply: {r}"));
        (reply, out.report.instructions)
    }

    /// The workload's result and the message's metered instructions.
    fn run(&mut self) -> (i64, u64) {
        let (reply, instructions) = self.update("run", &[]);
        let value = i64::from_le_bytes(reply.as_slice().try_into().expect("8-byte reply"));
        (value, instructions)
    }

    /// The bench canister's reply to one timed insert and the message's metered instructions.
    fn insert(&mut self, offset: u64) -> (CanisterReply, u64) {
        let arg = Encode!(&offset, &1u64, &CANISTER_ROWS_PER_RUN).unwrap();
        let (reply, instructions) = self.update("add_users_btree", &arg);
        let value = Decode!(&reply, CanisterReply).expect("add_users_btree reply decodes");
        (value, instructions)
    }
}

/// The bench canister's B-tree insert workload.
const CANISTER_WORKLOAD: &str = "bench-canister-btree-insert";
const CANISTER_TARGET_RATIO: f64 = 0.8;
/// Rows each timed `add_users_btree` call inserts (100-byte payloads, the default).
const CANISTER_ROWS_PER_RUN: u64 = 5_000;

type CanisterReply = Result<bench_types::InsertReport, String>;

/// Plain wasmtime running the uninstrumented bench canister on the engine's System API
/// (linked unmetered): what the canister's work costs without instruction metering, heap
/// dirty-page tracking and message bookkeeping.
struct PlainCanister {
    store: wasmtime::Store<HostState>,
    instance: wasmtime::Instance,
}

impl PlainCanister {
    fn new(wasm: &[u8]) -> Self {
        let mut config = wasmtime::Config::new();
        // The replica's Wasm stack limit, which the engine uses too (wasmtime checks it
        // against the async stack size even for sync calls).
        config.async_stack_size(6 << 20).max_wasm_stack(5 << 20);
        icbench::engine::embedded::perf_map_if_asked(&mut config);
        let engine = wasmtime::Engine::new(&config).expect("plain wasmtime config");
        let module = wasmtime::Module::new(&engine, wasm).expect("the bench canister compiles");
        let mut linker = wasmtime::Linker::new(&engine);
        system_api::link_unmetered(&mut linker, &module, false).expect("System API links");
        let limits = Limits::BENCHMARKING;
        let state = HostState {
            counter: None,
            left: 0,
            memory: None,
            heap: None,
            stable: StableMemory::new(StableImage::default(), MAX_STABLE_BYTES),
            msg: Message::new(ApiType::Init, "", Vec::new(), 0),
            limits,
            canister_id: vec![1],
            time_ns: 1,
            canister_version: 0,
            cycles_balance: 1 << 60,
            controllers: vec![vec![0x04]],
            certified_data: Vec::new(),
            global_timer: 0,
            log: Vec::new(),
            print_log: false,
            profiler: None,
            tracker: Tracker::new(None),
            native_stable: None,
            counter_reads: CounterReads::Off,
            reads: Vec::new(),
        };
        let mut store = wasmtime::Store::new(&engine, state);
        let instance = linker
            .instantiate(&mut store, &module)
            .expect("the bench canister instantiates");
        let memory = instance.get_memory(&mut store, "memory");
        store.data_mut().memory = memory;
        let mut canister = PlainCanister { store, instance };
        canister.call(ApiType::Init, "canister_init", "", Encode!().unwrap());
        canister
    }

    /// Runs one entry point as a message; the reply, if any.
    fn call(&mut self, api: ApiType, export: &str, method: &str, arg: Vec<u8>) -> Option<Vec<u8>> {
        let limit = self.store.data().limits.max_instructions_per_update;
        let state = self.store.data_mut();
        state.msg = Message::new(api, method, arg, limit);
        state.stable.begin(u64::MAX, u64::MAX, false);
        let func = self
            .instance
            .get_typed_func::<(), ()>(&mut self.store, export)
            .expect("exported entry point");
        func.call(&mut self.store, ())
            .unwrap_or_else(|e| panic!("plain {export} trapped: {e:#}"));
        let state = self.store.data_mut();
        state.stable.commit();
        match state.msg.response.take() {
            Some(Response::Reply(bytes)) => Some(bytes),
            Some(Response::Reject(text)) => panic!("plain {export} rejected: {text}"),
            None => None,
        }
    }

    fn insert(&mut self, offset: u64) -> CanisterReply {
        let arg = Encode!(&offset, &1u64, &CANISTER_ROWS_PER_RUN).unwrap();
        let reply = self
            .call(
                ApiType::Update,
                "canister_update add_users_btree",
                "add_users_btree",
                arg,
            )
            .expect("add_users_btree replies");
        Decode!(&reply, CanisterReply).expect("add_users_btree reply decodes")
    }
}

/// Rows inserted, or the canister's error.
fn inserted(reply: &CanisterReply) -> u64 {
    match reply {
        Ok(report) => report.rows_inserted,
        Err(e) => panic!("add_users_btree failed: {e}"),
    }
}

/// `ENGINE_SPEED_SIDE=metered`: only the metered side of the bench canister's workload
/// runs, `runs` inserts after a warm-up, for `perf record` to see it alone; nothing timed.
fn metered_side_alone() -> bool {
    match std::env::var("ENGINE_SPEED_SIDE") {
        Ok(side) if side == "metered" => true,
        Ok(side) => panic!("ENGINE_SPEED_SIDE is metered, not {side:?}"),
        Err(_) => false,
    }
}

/// The metered side of the bench canister's workload alone ([`metered_side_alone`]).
fn run_metered_side(wasm: &[u8], runs: usize) {
    let mut metered = Metered::new(wasm, &Encode!().unwrap(), Counter::Local);
    let (time, _) = timed(|| {
        for run_index in 0..=runs as u64 {
            let reply = metered.insert(run_index * CANISTER_ROWS_PER_RUN).0;
            assert_eq!(
                inserted(&reply),
                CANISTER_ROWS_PER_RUN,
                "metered run {run_index}"
            );
        }
    });
    println!(
        "metered side alone: {} inserts of {CANISTER_ROWS_PER_RUN} rows, {:.2} ms of CPU in all",
        runs + 1,
        time.as_secs_f64() * 1e3
    );
}

/// Best-of-`runs` times of the bench canister's inserts: plain, metered, replica code.
fn canister_workload(runs: usize) -> Measured {
    let wasm = icbench::bench_canister::ensure_built(true)
        .expect("the bench canister (target/canister/bench.wasm) builds");
    if metered_side_alone() {
        run_metered_side(&wasm, runs);
        std::process::exit(0);
    }
    let mut plain = PlainCanister::new(&wasm);
    let mut metered = Metered::new(&wasm, &Encode!().unwrap(), Counter::Local);
    let mut replica_code = Metered::new(&wasm, &Encode!().unwrap(), Counter::Global);
    let (mut plain_time, mut metered_time, mut replica_time) =
        (Duration::MAX, Duration::MAX, Duration::MAX);
    let mut instructions = 0;
    // Run 0 is the warm-up; every run inserts the next block of ids on all three.
    for run in 0..=runs as u64 {
        let offset = run * CANISTER_ROWS_PER_RUN;
        let (t, p) = timed(|| plain.insert(offset));
        let (tm, (m, n)) = timed(|| metered.insert(offset));
        let (tr, (r, nr)) = timed(|| replica_code.insert(offset));
        assert_eq!(inserted(&p), CANISTER_ROWS_PER_RUN, "plain run {run}");
        assert_eq!(inserted(&m), CANISTER_ROWS_PER_RUN, "metered run {run}");
        assert_eq!(
            inserted(&r),
            CANISTER_ROWS_PER_RUN,
            "replica-code run {run}"
        );
        assert_eq!(
            n, nr,
            "run {run}: the replica's counter code counts differently"
        );
        if run > 0 {
            plain_time = plain_time.min(t);
            metered_time = metered_time.min(tm);
            replica_time = replica_time.min(tr);
            instructions = n;
        }
    }
    Measured {
        plain: plain_time,
        metered: metered_time,
        replica: replica_time,
        instructions,
    }
}

/// `ENGINE_SPEED_WORKLOADS=a,b`: only these workloads (for profiling one); unset, all.
fn selected_workloads() -> Option<Vec<String>> {
    let value = std::env::var("ENGINE_SPEED_WORKLOADS").ok()?;
    let known: Vec<&str> = workloads()
        .iter()
        .map(|w| w.name)
        .chain([CANISTER_WORKLOAD])
        .collect();
    let names: Vec<String> = value.split(',').map(|n| n.trim().to_string()).collect();
    for name in &names {
        if !known.contains(&name.as_str()) {
            panic!(
                "ENGINE_SPEED_WORKLOADS names {name:?}, which is not a workload (known: {})",
                known.join(", ")
            );
        }
    }
    Some(names)
}

/// One workload's best times and its metered instruction count.
struct Measured {
    plain: Duration,
    metered: Duration,
    replica: Duration,
    instructions: u64,
}

/// The CPU time (user + system, all threads) the process has used: unlike wall time it
/// does not count waiting for the cores while other processes run, which on a shared
/// machine made single runs tens of times slower than they are.
#[allow(unsafe_code)] // clock_gettime(2)
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `f`'s result and the CPU time it took. Nothing else runs in this process meanwhile
/// (compilation is done before), so that is the work's own time.
fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = cpu_time();
    let value = f();
    (cpu_time() - start, value)
}

/// The micro-workload `w`: best-of-`runs` times, plain and metered runs alternating.
fn module_workload(w: &Workload, runs: usize) -> Measured {
    let mut plain = Plain::new(&w.wasm);
    let mut metered = Metered::new(&w.wasm, &[], Counter::Local);
    let mut replica_code = Metered::new(&w.wasm, &[], Counter::Global);
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
    Measured {
        plain: plain_time,
        metered: metered_time,
        replica: replica_time,
        instructions,
    }
}

fn main() {
    // The CLI runs canisters on threads with room for the Wasm stack, where the engine
    // runs a message in place; elsewhere it spawns a thread per message, which the bench
    // would time as the engine's (about 3% of a 5,000-row insert, measured).
    std::thread::scope(|scope| {
        icbench::engine::embedded::spawn_scoped(scope, "engine_speed", run_all)
            .expect("spawning the bench's thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn run_all() {
    // `cargo bench` passes `--bench`; there are no options to parse.
    let runs = match std::env::var("ENGINE_SPEED_RUNS") {
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!("ENGINE_SPEED_RUNS must be a positive number of runs, not {v:?}"),
        },
        Err(_) => RUNS,
    };
    println!("engine_speed: plain wasmtime vs the embedded engine (instrumented + metered), best of {runs} after a warm-up\n");
    let only = selected_workloads();
    let workloads: Vec<Workload> = workloads()
        .into_iter()
        .filter(|w| {
            only.as_ref()
                .is_none_or(|names| names.contains(&w.name.to_string()))
        })
        .collect();
    let with_canister = only
        .as_ref()
        .is_none_or(|names| names.contains(&CANISTER_WORKLOAD.to_string()));
    for w in &workloads {
        println!("  {:<27} {}", w.name, w.what);
    }
    if with_canister {
        println!(
            "  {CANISTER_WORKLOAD:<27} the bench canister's add_users_btree, {CANISTER_ROWS_PER_RUN} rows per call"
        );
    }
    println!();
    println!(
        "{:<27} | {:>10} | {:>11} | {:>6} | {:>15} | {:>16} | {:>14} | target",
        "workload",
        "plain ms",
        "metered ms",
        "ratio",
        "metered instr",
        "metered instr/s",
        "replica code *",
    );
    println!("{}", "-".repeat(134));
    let mut below = Vec::new();
    let mut json = Vec::new();
    let measured = workloads
        .iter()
        .map(|w| (w.name, TARGET_RATIO, module_workload(w, runs)))
        .chain(with_canister.then(|| {
            (
                CANISTER_WORKLOAD,
                CANISTER_TARGET_RATIO,
                canister_workload(runs),
            )
        }));
    for (name, target, m) in measured {
        let plain_ms = m.plain.as_secs_f64() * 1e3;
        let metered_ms = m.metered.as_secs_f64() * 1e3;
        let ratio = plain_ms / metered_ms;
        let ok = ratio >= target;
        if !ok {
            below.push(format!("{name} (target {target})"));
        }
        println!(
            "{:<27} | {:>10.2} | {:>11.2} | {:>6.3} | {:>15} | {:>16} | {:>14.3} | >= {target} {}",
            name,
            plain_ms,
            metered_ms,
            ratio,
            m.instructions,
            format!("{:.3e}", m.instructions as f64 / m.metered.as_secs_f64()),
            m.plain.as_secs_f64() / m.replica.as_secs_f64(),
            if ok { "ok" } else { "BELOW" }
        );
        json.push(serde_json::json!({
            "name": name,
            "plain_ms": plain_ms,
            "metered_ms": metered_ms,
            "ratio": ratio,
        }));
    }
    println!();
    println!("* ratio with the replica's own counter code (Counter::Global): same counts, slower");
    if below.is_empty() {
        println!("all workloads meet their target (metered speed / plain speed)");
    } else {
        println!("below the target: {}", below.join(", "));
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| icbench::bench_canister::project_root().join("target"));
    let path = target_dir.join("engine_speed.json");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "workloads": json }))
        .expect("JSON encodes");
    std::fs::write(&path, text + "\n")
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    println!("results written to {}", path.display());
}
