//! Bounded, deterministic fuzzing of the embedded engine: no module may crash the host.
//!
//! `wasm-smith` generates canister-shaped modules from a fixed list of seeds (a splitmix64
//! stream per seed, fed to `arbitrary::Unstructured`). The exports are forced by a template
//! (`canister_update a`, `canister_query q`, `canister_init`, ...), the imports are drawn from
//! real `ic0` functions, so most modules install and their methods run: random code hits the
//! metering, the System API (with random pointers and sizes), traps, rollbacks, upgrades,
//! snapshots. Every seed runs twice in fresh engines and must give the same trace.
//!
//! A panic anywhere fails the test; nothing is wrapped in `catch_unwind`. A hard crash
//! (signal) kills the process: the seed each shard is running is always written to
//! `$CARGO_TARGET_TMPDIR/fuzz_engine_current_seed_<shard>` first, so it can be replayed with
//! `FUZZ_ENGINE_FIRST=<seed> FUZZ_ENGINE_SEEDS=1 cargo test --release --test it fuzz_engine:: -- --nocapture`.
//! `FUZZ_ENGINE_SEEDS=<n>` runs more seeds (default 600, about 25 s; 3000 took 135 s). The
//! seeds are split into `SHARDS` tests so the harness runs them side by side.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use arbitrary::Unstructured;
use icbench::engine::cost::Limits;
use icbench::engine::embedded::EmbeddedEngine;
use icbench::engine::instrument::{self, Counter, InstrumentError};
use icbench::engine::Profiling;
use icbench::engine::{CallOutcome, Engine};
use wasm_smith::{Config, Module};

const DEFAULT_SEEDS: u64 = 600;
/// Tests the seeds are split into: one test of all of them was the test run's longest by far.
const SHARDS: u64 = 4;
const LIMIT: u64 = 10_000_000;

fn limits() -> Limits {
    Limits {
        max_instructions_per_update: LIMIT,
        max_instructions_per_query: LIMIT,
        // The base cost of creating the execution state (20M from vintage 2026-04) comes
        // out of install_code's budget first: the hooks keep LIMIT after it.
        max_instructions_per_install: LIMIT
            + icbench::engine::cost::CREATE_EXECUTION_STATE_BASE_COST,
        max_instructions_per_slice: LIMIT,
        ..Limits::APPLICATION
    }
}

/// The `ic0` functions generated code may import, with the System API's signatures;
/// `ADDR` (addresses and sizes) is `i32` in a wasm32 module and `i64` in a wasm64 one.
/// `call_new` outside a call's context and `msg_reject_code` outside a reject callback must
/// trap cleanly (IC0504), never crash.
const IC0_IMPORTS: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func (result ADDR)))
  (import "ic0" "msg_arg_data_copy" (func (param ADDR ADDR ADDR)))
  (import "ic0" "msg_caller_size" (func (result ADDR)))
  (import "ic0" "msg_caller_copy" (func (param ADDR ADDR ADDR)))
  (import "ic0" "msg_method_name_size" (func (result ADDR)))
  (import "ic0" "msg_method_name_copy" (func (param ADDR ADDR ADDR)))
  (import "ic0" "msg_reply_data_append" (func (param ADDR ADDR)))
  (import "ic0" "msg_reply" (func))
  (import "ic0" "msg_reject" (func (param ADDR ADDR)))
  (import "ic0" "msg_reject_code" (func (result i32)))
  (import "ic0" "canister_self_copy" (func (param ADDR ADDR ADDR)))
  (import "ic0" "canister_cycle_balance128" (func (param ADDR)))
  (import "ic0" "stable_grow" (func (param i32) (result i32)))
  (import "ic0" "stable_write" (func (param i32 i32 i32)))
  (import "ic0" "stable64_size" (func (result i64)))
  (import "ic0" "stable64_grow" (func (param i64) (result i64)))
  (import "ic0" "stable64_read" (func (param i64 i64 i64)))
  (import "ic0" "stable64_write" (func (param i64 i64 i64)))
  (import "ic0" "certified_data_set" (func (param ADDR ADDR)))
  (import "ic0" "time" (func (result i64)))
  (import "ic0" "global_timer_set" (func (param i64) (result i64)))
  (import "ic0" "performance_counter" (func (param i32) (result i64)))
  (import "ic0" "is_controller" (func (param ADDR ADDR) (result i32)))
  (import "ic0" "debug_print" (func (param ADDR ADDR)))
  (import "ic0" "trap" (func (param ADDR ADDR)))
  (import "ic0" "call_new" (func (param ADDR ADDR ADDR ADDR ADDR ADDR ADDR ADDR)))
)"#;

/// Export shapes. wasm-smith generates a random body for every exported function.
const TEMPLATES: &[&str] = &[
    // A full canister with an exported heap.
    r#"(module
      (memory (export "memory") 1 16)
      (func (export "canister_init"))
      (func (export "canister_update a"))
      (func (export "canister_update b"))
      (func (export "canister_query q"))
      (func (export "canister_pre_upgrade"))
      (func (export "canister_post_upgrade")))"#,
    // Lean, small heap.
    r#"(module
      (memory (export "memory") 1 2)
      (func (export "canister_update a"))
      (func (export "canister_query q")))"#,
    // No init, no start-up code at all: nothing can leave the canister empty.
    r#"(module
      (memory (export "memory") 1 16)
      (func (export "canister_update a"))
      (func (export "canister_update b"))
      (func (export "canister_update c"))
      (func (export "canister_query q"))
      (func (export "canister_query r")))"#,
    // No exported memory (wasm-smith may still define an internal one): the System API
    // calls that touch the heap must fail cleanly.
    r#"(module
      (func (export "canister_init"))
      (func (export "canister_update a"))
      (func (export "canister_update b"))
      (func (export "canister_query q")))"#,
];

/// Templates only the "wild" flavour uses: shapes the replica would refuse.
const WILD_TEMPLATES: &[&str] = &[
    // A method with a parameter and a result: calling it must be an error, not a crash.
    r#"(module
      (memory (export "memory") 1 16)
      (func (export "canister_update a"))
      (func (export "canister_update p") (param i32) (result i64) unreachable)
      (func (export "canister_query q")))"#,
];

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What one seed turns into.
struct Case {
    wild: bool,
    /// A 64-bit heap, with the System API's 64-bit signatures.
    wasm64: bool,
    template: usize,
    wasm: Vec<u8>,
    arg: Vec<u8>,
}

/// Every sixth seed is "wild": wasm-smith's default feature set (threads, GC, exceptions,
/// multi-memory, relaxed SIMD, ...), which the IC rejects; instrumentation and install must
/// say so with an `Err`, not a panic. Another sixth are wasm64 canisters: a 64-bit heap and
/// the System API with 64-bit addresses.
fn generate(seed: u64) -> Option<Case> {
    let mut state = seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x1c_be_ef;
    let wild = seed % 6 == 5;
    let wasm64 = seed % 6 == 2;
    let len = 512 + (splitmix64(&mut state) % (24 * 1024)) as usize;
    let bytes: Vec<u8> = (0..len).map(|_| splitmix64(&mut state) as u8).collect();
    let templates: Vec<&str> = if wild {
        TEMPLATES.iter().chain(WILD_TEMPLATES).copied().collect()
    } else if wasm64 {
        // The heap must be the template's 64-bit one: a memory wasm-smith adds may be
        // 32-bit, and a module whose imports do not match its heap is refused at install.
        TEMPLATES
            .iter()
            .filter(|t| t.contains("(memory"))
            .copied()
            .collect()
    } else {
        TEMPLATES.to_vec()
    };
    let template = (splitmix64(&mut state) % templates.len() as u64) as usize;
    let addr = if wasm64 { "i64" } else { "i32" };
    let shape = if wasm64 {
        templates[template].replace(
            "(memory (export \"memory\") ",
            "(memory (export \"memory\") i64 ",
        )
    } else {
        templates[template].to_string()
    };
    let exports = wat::parse_str(&shape).expect("template WAT is valid");
    let exports_memory = templates[template].contains("(memory");
    let arg_len = (splitmix64(&mut state) % 64) as usize;
    let arg: Vec<u8> = (0..arg_len).map(|_| splitmix64(&mut state) as u8).collect();

    let mut config = Config {
        available_imports: Some(
            wat::parse_str(IC0_IMPORTS.replace("ADDR", addr)).expect("import WAT is valid"),
        ),
        exports: Some(exports),
        max_funcs: 24,
        max_instructions: 200,
        max_nesting_depth: 6,
        max_globals: 8,
        max_types: 24,
        max_data_segments: 4,
        max_element_segments: 4,
        max_elements: 16,
        max_tables: 1,
        max_table_elements: 64,
        table_max_size_required: true,
        // The template's exported memory is added on top of the generated ones.
        max_memories: if exports_memory { 0 } else { 1 },
        max_memory32_bytes: 16 * 65536,
        max_memory64_bytes: 16 * 65536,
        memory_max_size_required: true,
        // A start function is random code that often traps, leaving the canister empty.
        allow_start_export: seed.is_multiple_of(2),
        // A third of the seeds generate code that cannot trap (bounds-checked loads, no
        // `unreachable`, ...): it runs to the end of its body far more often, so more
        // System API calls and replies happen; the rest trap in every way they can.
        disallow_traps: seed % 3 == 1,
        ..Config::default()
    };
    if !wild {
        // The replica's feature set (instrument::FEATURES): Wasm 2.0 + tail calls.
        config.threads_enabled = false;
        config.shared_everything_threads_enabled = false;
        config.exceptions_enabled = false;
        config.gc_enabled = false;
        config.memory64_enabled = wasm64;
        config.relaxed_simd_enabled = false;
        config.extended_const_enabled = false;
        config.custom_page_sizes_enabled = false;
        config.wide_arithmetic_enabled = false;
        config.simd_enabled = true;
        config.tail_call_enabled = true;
        // Reference types (externref, typed select, table.get/set of externref) are part of
        // Wasm 2.0, so of the IC's feature set: on for every seed.
        config.reference_types_enabled = true;
    }
    let mut u = Unstructured::new(&bytes);
    let module = Module::new(config, &mut u).ok()?;
    Some(Case {
        wild,
        wasm64,
        template,
        wasm: module.to_bytes(),
        arg,
    })
}

/// The canister methods a module exports, in export order: (is_query, name).
fn methods(wasm: &[u8]) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let Ok(wasmparser::Payload::ExportSection(reader)) = payload else {
            continue;
        };
        for export in reader.into_iter().flatten() {
            if let Some(m) = export.name.strip_prefix("canister_update ") {
                out.push((false, m.to_string()));
            } else if let Some(m) = export.name.strip_prefix("canister_query ") {
                out.push((true, m.to_string()));
            }
        }
    }
    out
}

#[derive(Default)]
struct Stats {
    generated: u64,
    generate_failed: u64,
    wild: u64,
    wasm64: u64,
    instrumented: u64,
    /// Of those, how many could keep the counter in locals (the others fall back).
    local_counter: u64,
    instrument_errors: BTreeMap<String, u64>,
    installed: u64,
    install_errors: BTreeMap<String, u64>,
    init_rejected: u64,
    calls: u64,
    replies: u64,
    rejects: BTreeMap<String, u64>,
    engine_errors: BTreeMap<String, u64>,
    instructions: u64,
    max_instructions: u64,
}

fn bump(map: &mut BTreeMap<String, u64>, key: impl Into<String>) {
    *map.entry(key.into()).or_default() += 1;
}

/// A short category for an error text: the canister id, byte offsets and numbers are
/// folded away (digits inside names such as `ic0` or `stable64` are kept).
fn category(text: &str) -> String {
    let text = text.replace("lxzze-o7777-77777-aaaaa-cai", "<id>");
    let mut out = String::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(" (at offset ") {
            rest = r.split_once(')').map(|(_, after)| after).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix(" at offset ") {
            rest = r.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        } else {
            let c = rest.chars().next().unwrap();
            let after_letter = out.chars().last().is_some_and(|l| l.is_ascii_alphabetic());
            if c.is_ascii_digit() && after_letter {
                let name_end = rest
                    .find(|d: char| !d.is_ascii_digit())
                    .unwrap_or(rest.len());
                out.push_str(&rest[..name_end]);
                rest = &rest[name_end..];
            } else if c.is_ascii_digit() {
                rest = rest.trim_start_matches(|d: char| d.is_ascii_hexdigit() || d == 'x');
                out.push('N');
            } else {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    let width = std::env::var("FUZZ_ENGINE_WIDE")
        .map(|_| 400)
        .unwrap_or(150);
    out.chars().take(width).collect()
}

/// Records one call's outcome in the trace, checks its invariants and counts it. A message
/// charges at most its `limit`, plus `page_overhead` per heap page it wrote.
fn record(
    trace: &mut Vec<String>,
    stats: &mut Option<&mut Stats>,
    what: &str,
    out: anyhow::Result<CallOutcome>,
    (limit, page_overhead): (u64, u64),
) {
    match out {
        Ok(out) => {
            let r = &out.report;
            // A profiled message explains its whole charge, whatever it did.
            if let Some(profile) = &r.profile {
                if profile.total() != r.instructions {
                    eprintln!(
                        "{what}: {:#?}\n{:?}\n{:?}",
                        profile.stacks(),
                        r.stages,
                        out.result
                    );
                }
                assert_eq!(
                    profile.total(),
                    r.instructions,
                    "{what}: the profile does not sum to the charge"
                );
            }
            // The counter is clamped to the limit; only the after-execution heap charge adds to it.
            assert!(
                r.instructions <= limit + r.heap_dirty_pages * page_overhead,
                "{what}: {} instructions exceed the limit {limit} + {} dirty pages",
                r.instructions,
                r.heap_dirty_pages
            );
            let line = match &out.result {
                Ok(reply) => {
                    let mut hex = String::new();
                    for b in reply.iter().take(64) {
                        let _ = write!(hex, "{b:02x}");
                    }
                    format!("{what}: reply {} bytes {hex}", reply.len())
                }
                Err(reject) => {
                    assert_eq!(
                        reject.code,
                        reject.error_code.reject_code(),
                        "{what}: reject code and error code disagree: {reject}"
                    );
                    format!(
                        "{what}: reject {:?} {} {}",
                        reject.code, reject.error_code, reject.message
                    )
                }
            };
            trace.push(format!(
                "{line} | instr {} heap_dirty {} stable_dirty {} heap {}->{} stable {}->{}",
                r.instructions,
                r.heap_dirty_pages,
                r.stable_dirty_pages,
                r.heap_bytes_before,
                r.heap_bytes_after,
                r.stable_bytes_before,
                r.stable_bytes_after
            ));
            if let Some(s) = stats {
                s.calls += 1;
                s.instructions += r.instructions;
                s.max_instructions = s.max_instructions.max(r.instructions);
                match &out.result {
                    Ok(_) => s.replies += 1,
                    Err(reject) => bump(
                        &mut s.rejects,
                        format!("{} {}", reject.error_code, category(&reject.message)),
                    ),
                }
            }
        }
        Err(e) => {
            trace.push(format!("{what}: engine error {e:#}"));
            if let Some(s) = stats {
                s.calls += 1;
                bump(
                    &mut s.engine_errors,
                    format!("{what}: {}", category(&format!("{e:#}"))),
                );
            }
        }
    }
}

/// Installs the module in a fresh engine and drives every method through updates,
/// queries, an upgrade and a snapshot/restore. Returns the full trace.
fn exercise(
    case: &Case,
    counter: Counter,
    profiling: Profiling,
    mut stats: Option<&mut Stats>,
) -> Vec<String> {
    let mut trace = Vec::new();
    let page_overhead = Limits::APPLICATION.dirty_page_overhead
        * if case.wasm64 {
            icbench::engine::cost::WASM64_DIRTY_PAGE_OVERHEAD_MULTIPLIER
        } else {
            1
        };
    let mut engine = EmbeddedEngine::new(limits()).with_counter(counter);
    engine.set_profiling(profiling).unwrap();
    let id = match engine.install(&case.wasm, &case.arg) {
        Err(e) => {
            // Inside the IC's feature set the engine must load every module; the only
            // acceptable install errors are the replica's refusals (a data segment past the
            // initial memory, a mutable reference-typed global) and a failing instantiation
            // (an out-of-bounds element segment, or a data segment whose offset is not a
            // constant).
            if !case.wild {
                let text = format!("{e:#}");
                assert!(
                    text.starts_with("instantiating the module failed")
                        || text.contains("Wasm module has invalid data segment")
                        || text.contains("holds a reference (funcref/externref)"),
                    "a valid IC module was refused: {text}"
                );
            }
            trace.push(format!("install: error {e:#}"));
            if let (Some(_), Ok(dir)) = (&stats, std::env::var("FUZZ_ENGINE_DUMP")) {
                let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
                std::fs::write(format!("{dir}/install_error_{n}.wasm"), &case.wasm).unwrap();
                std::fs::write(format!("{dir}/install_error_{n}.txt"), format!("{e:#}")).unwrap();
            }
            if let Some(s) = stats {
                bump(&mut s.install_errors, category(&format!("{e:#}")));
            }
            return trace;
        }
        Ok((id, out)) => {
            if let Some(s) = stats.as_deref_mut() {
                s.installed += 1;
                if out.result.is_err() {
                    s.init_rejected += 1;
                }
            }
            record(
                &mut trace,
                &mut stats,
                "install",
                Ok(out),
                (LIMIT + 1_000_000_000_000, page_overhead),
            );
            id
        }
    };
    let methods = methods(&case.wasm);
    let call_all = |engine: &mut EmbeddedEngine,
                    trace: &mut Vec<String>,
                    stats: &mut Option<&mut Stats>,
                    round: &str| {
        for (is_query, name) in &methods {
            if *is_query {
                let out = engine.query(id, name, &case.arg);
                record(
                    trace,
                    stats,
                    &format!("{round} query {name}"),
                    out,
                    (LIMIT, page_overhead),
                );
            }
            // Query methods may also be called as updates (replicated queries).
            let out = engine.update(id, name, &case.arg);
            record(
                trace,
                stats,
                &format!("{round} update {name}"),
                out,
                (LIMIT, page_overhead),
            );
        }
        let out = engine.update(id, "no_such_method", &[]);
        record(
            trace,
            stats,
            &format!("{round} update no_such_method"),
            out,
            (LIMIT, page_overhead),
        );
    };
    call_all(&mut engine, &mut trace, &mut stats, "r1");
    call_all(&mut engine, &mut trace, &mut stats, "r2");

    let snapshot = engine.snapshot(id);
    trace.push(format!(
        "snapshot: {}",
        snapshot
            .as_ref()
            .map(|s| format!("{s:?}"))
            .unwrap_or_else(|e| format!("error {e:#}"))
    ));
    let hash_before = engine.state_hash(id).ok();

    let out = engine.upgrade(id, &case.wasm, &case.arg);
    // pre_upgrade + compile + start + post_upgrade: each below the install limit.
    record(
        &mut trace,
        &mut stats,
        "upgrade",
        out,
        (4 * LIMIT + 1_000_000_000_000, page_overhead),
    );
    call_all(&mut engine, &mut trace, &mut stats, "r3");

    if let Ok(snapshot) = snapshot {
        match engine.restore(id, snapshot) {
            Ok(()) => {
                let hash_after = engine.state_hash(id).ok();
                assert_eq!(
                    hash_before, hash_after,
                    "restoring a snapshot gives back the same state"
                );
                trace.push("restore: ok".into());
            }
            Err(e) => trace.push(format!("restore: error {e:#}")),
        }
        call_all(&mut engine, &mut trace, &mut stats, "r4");
    }
    let hash = engine
        .state_hash(id)
        .map(|h| h.iter().map(|b| format!("{b:02x}")).collect::<String>());
    trace.push(format!(
        "state: {}",
        hash.unwrap_or_else(|e| format!("error {e:#}"))
    ));
    trace
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run_seed(seed: u64, shard: u64, stats: &mut Stats) {
    let Some(case) = generate(seed) else {
        stats.generate_failed += 1;
        return;
    };
    stats.generated += 1;
    if case.wild {
        stats.wild += 1;
    }
    if case.wasm64 {
        stats.wasm64 += 1;
    }
    // Written before anything runs, so a hard crash leaves the module behind.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        dir.join(format!("fuzz_engine_current_seed_{shard}")),
        format!("{seed}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("fuzz_engine_current_{shard}.wasm")),
        &case.wasm,
    )
    .unwrap();

    let first = instrument::instrument(&case.wasm);
    let second = instrument::instrument(&case.wasm);
    match (&first, &second) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                a.wasm, b.wasm,
                "seed {seed}: instrumentation is not deterministic"
            );
            stats.instrumented += 1;
            if a.counter == Counter::Local {
                stats.local_counter += 1;
            }
            // Whatever instrumentation accepts, it must turn into a valid module.
            let mut validator =
                wasmparser::Validator::new_with_features(instrument::OUTPUT_FEATURES);
            if let Err(e) = validator.validate_all(&a.wasm) {
                panic!("seed {seed}: instrumentation produced an invalid module: {e} (template {}, wild {})", case.template, case.wild);
            }
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "seed {seed}: instrumentation errors differ");
            let kind = match a {
                InstrumentError::InvalidModule { message, .. } => {
                    format!("invalid: {}", category(message))
                }
                InstrumentError::UnsupportedFeature { message, .. } => {
                    format!("unsupported: {}", category(message))
                }
                InstrumentError::ReservedExport { name } => format!("reserved export {name}"),
                InstrumentError::InvalidDataSegment { .. } => "data segment out of bounds".into(),
                InstrumentError::MutableReferenceGlobal { .. } => "mutable reference global".into(),
                InstrumentError::NotProfilable { reason } => format!("not profilable: {reason}"),
            };
            bump(&mut stats.instrument_errors, kind);
        }
        _ => panic!("seed {seed}: instrumentation succeeded once and failed once"),
    }
    if !case.wild {
        // wasm-smith only produces valid modules, and the non-wild ones stay inside the IC's features.
        // The only refusals allowed are the replica's own: a data segment past the initial
        // memory, and a mutable reference-typed global it cannot save.
        if let Err(e) = &first {
            let refused_by_the_replica = matches!(
                e,
                InstrumentError::InvalidDataSegment { .. }
                    | InstrumentError::MutableReferenceGlobal { .. }
            );
            if !refused_by_the_replica {
                panic!("seed {seed}: an IC-feature module was refused by instrumentation: {e:?}");
            }
        }
    }

    let a = exercise(&case, Counter::Local, Profiling::Off, Some(stats));
    let b = exercise(&case, Counter::Local, Profiling::Off, None);
    if a != b {
        let diff = a.iter().zip(&b).find(|(x, y)| x != y);
        panic!("seed {seed}: two runs of the same module differ; first difference: {diff:#?}\n(lengths {} vs {})", a.len(), b.len());
    }
    // The replica's own counter code must give the same trace: same counts at every reply,
    // reject and trap. Deep recursion is the exception: where the stack overflows depends on
    // the frame sizes of the generated machine code (with the local counter a message can
    // run out of instructions where the global one overflowed), so a message that
    // overflowed the stack with either placement is not compared. It rolls back either way.
    // Profiled, each placement gives the unprofiled trace too (and `record` checks each
    // profile sums to its message's charge); the probes add to the machine stack only.
    for (counter, profiling, what) in [
        (
            Counter::Global,
            Profiling::Off,
            "the local and the global counter",
        ),
        (
            Counter::Local,
            Profiling::Messages,
            "profiled and unprofiled runs",
        ),
        (
            Counter::Global,
            Profiling::Messages,
            "profiled (global) and unprofiled runs",
        ),
    ] {
        let c = exercise(&case, counter, profiling, None);
        assert_eq!(
            a.len(),
            c.len(),
            "seed {seed}: {what}: traces differ in length"
        );
        for (x, y) in a.iter().zip(&c) {
            if x.contains("stack overflow") || y.contains("stack overflow") {
                continue;
            }
            assert_eq!(x, y, "seed {seed}: {what} disagree");
        }
    }
}

/// Shard `shard` of `SHARDS` of the seeds, each shard held to the whole run's checks. Runs
/// on the test harness's own thread: the engine runs Wasm on a thread with a large enough
/// stack whatever the caller has (see `deep_recursion_on_a_2mib_host_stack_is_a_clean_trap`
/// below).
fn generated_modules_never_crash_the_engine(shard: u64) {
    let first = env_u64("FUZZ_ENGINE_FIRST", 0);
    let count = env_u64("FUZZ_ENGINE_SEEDS", DEFAULT_SEEDS);
    let seeds = first + count * shard / SHARDS..first + count * (shard + 1) / SHARDS;
    if seeds.is_empty() {
        // Fewer seeds than shards (a replay of one seed): another shard runs them.
        return;
    }
    let started = std::time::Instant::now();
    let mut stats = Stats::default();
    for seed in seeds.clone() {
        run_seed(seed, shard, &mut stats);
    }
    let s = &stats;
    println!(
        "fuzz_engine: seeds {}..{} in {:.1} s",
        seeds.start,
        seeds.end,
        started.elapsed().as_secs_f64()
    );
    println!(
        "  modules generated        {:>6}  ({} wild-feature, {} wasm64, {} generator failures)",
        s.generated, s.wild, s.wasm64, s.generate_failed
    );
    println!(
        "  instrumented             {:>6}  ({} with the local counter)",
        s.instrumented, s.local_counter
    );
    for (k, n) in &s.instrument_errors {
        println!("    instrument error {n:>5}  {k}");
    }
    println!(
        "  installed                {:>6}  ({} with canister_init/start rejected)",
        s.installed, s.init_rejected
    );
    for (k, n) in &s.install_errors {
        println!("    install error    {n:>5}  {k}");
    }
    println!("  calls                    {:>6}  ({} replies, {} instructions in all, max {} in one message)", s.calls, s.replies, s.instructions, s.max_instructions);
    for (k, n) in &s.rejects {
        println!("    reject           {n:>5}  {k}");
    }
    for (k, n) in &s.engine_errors {
        println!("    engine error     {n:>5}  {k}");
    }
    // The fuzz must actually execute code, not just be refused.
    assert!(
        s.installed * 2 >= s.generated,
        "too few generated modules install: {} of {}",
        s.installed,
        s.generated
    );
    assert!(s.replies > 0, "no call ever replied");
    // The local/global comparison must cover most modules, not only the fallback.
    assert!(
        s.local_counter * 2 >= s.instrumented,
        "only {} of {} modules used the local counter",
        s.local_counter,
        s.instrumented
    );
}

#[test]
fn generated_modules_never_crash_the_engine_shard_1() {
    generated_modules_never_crash_the_engine(0);
}

#[test]
fn generated_modules_never_crash_the_engine_shard_2() {
    generated_modules_never_crash_the_engine(1);
}

#[test]
fn generated_modules_never_crash_the_engine_shard_3() {
    generated_modules_never_crash_the_engine(2);
}

#[test]
fn generated_modules_never_crash_the_engine_shard_4() {
    generated_modules_never_crash_the_engine(3);
}

/// Runs one update of an endlessly recursive method on a thread with `stack` bytes of
/// native stack; returns the reject's error code.
fn recurse_on_thread(stack: usize) -> String {
    let wasm = wat::parse_str(
        r#"(module
             (func $f (param i64) (result i64) (i64.add (call $f (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
             (func (export "canister_update recurse") (drop (call $f (i64.const 0)))))"#,
    )
    .unwrap();
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let mut engine = EmbeddedEngine::new(limits());
            let (id, install) = engine.install(&wasm, &[]).unwrap();
            install.result.unwrap();
            let out = engine.update(id, "recurse", &[]).unwrap();
            let reject = out.result.unwrap_err();
            format!("{} {}", reject.error_code, reject.message)
        })
        .unwrap()
        .join()
        .unwrap()
}

/// Deep recursion on a host thread of `stack_bytes` is an IC0502 stack overflow.
fn assert_recursion_traps_cleanly(stack_bytes: usize) {
    let reject = recurse_on_thread(stack_bytes);
    assert!(
        reject.starts_with("IC0502") && reject.contains("stack overflow"),
        "{reject}"
    );
}

#[test]
fn deep_recursion_on_a_large_host_stack_is_a_clean_trap() {
    assert_recursion_traps_cleanly(64 << 20);
}

/// Regression, found by this fuzz (seed 20 of the default run; the minimal module is the one
/// in `recurse_on_thread`).
/// wasmtime's `max_wasm_stack` is the replica's 5 MiB; when Wasm ran on the caller's thread,
/// a caller with less native stack than that (2 MiB: every `cargo test` thread) ran off its
/// end before wasmtime's check fired and the process aborted. The engine now runs Wasm on a
/// thread of its own with room for the 5 MiB, so the recursion is a clean IC0502 trap.
#[test]
fn deep_recursion_on_a_2mib_host_stack_is_a_clean_trap() {
    assert_recursion_traps_cleanly(2 << 20);
}

/// Regression, found by this fuzz (e.g. seed 4): reference types are in the IC's feature set
/// (Wasm 2.0), and wasmtime needs its `gc` cargo feature to load `externref`; without it,
/// install failed with "gc types are disallowed but found type which requires gc".
#[test]
fn a_module_with_an_externref_table_installs() {
    let wasm = wat::parse_str(
        r#"(module
             (import "ic0" "msg_reply" (func $reply))
             (table 1 externref)
             (func (export "canister_update a")
               (drop (ref.is_null (table.get 0 (i32.const 0))))
               (call $reply)))"#,
    )
    .unwrap();
    instrument::instrument(&wasm).expect("instrumentation accepts reference types");
    let mut engine = EmbeddedEngine::new(limits());
    let (id, install) = engine
        .install(&wasm, &[])
        .expect("the engine loads a module in the IC's feature set");
    install.result.unwrap();
    engine.update(id, "a", &[]).unwrap().result.unwrap();
}
