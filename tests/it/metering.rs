//! Instruction metering, checked against counts worked out by hand from the replica's rules
//! (`/work/shared/research/ic-metering.md` §1–2):
//!
//! * every function starts a *reentrant* segment with base cost 1 (charged and checked);
//! * `loop` starts a reentrant segment inside the loop (charged and checked per iteration);
//! * `if` starts a non-reentrant segment; `else`, `br`, `br_if`, `br_table`, `end`, `return`,
//!   `unreachable` and the tail calls end a segment (the next one is non-reentrant);
//! * a segment's cost includes its terminating operator and is charged when it starts;
//! * `block`, `loop`, `else` and `end` cost 0; `call` does not end a segment;
//! * bulk operations add their size operand (1 per byte / element) at run time.

use icbench::engine::instrument::{
    instrument, instrument_with, Counter, InstrumentError, Instrumented, CANISTER_START_EXPORT,
    INSTRUCTION_COUNTER_EXPORT, OUT_OF_INSTRUCTIONS_FLAG_EXPORT,
};
use wasmtime::{Caller, Engine, Instance, Linker, Module, Store, Val};

mod module;

const LIMIT: i64 = 1_000_000;

#[derive(Default)]
struct State {
    /// Counter values seen by `env.observe`.
    seen: Vec<i64>,
}

/// One instrumented copy of the test module, instantiated.
struct Run {
    store: Store<State>,
    instance: Instance,
    instrumented: Instrumented,
}

/// Every test module is instrumented with both counter placements; every observation (counter
/// at each host call and at the end, results, traps) must agree between the two. The
/// replica's own code ([`Counter::Global`]) is what the hand-worked counts describe.
struct Harness {
    runs: [Run; 2],
}

fn counter_of(caller: &mut Caller<'_, State>) -> i64 {
    let global = caller
        .get_export(INSTRUCTION_COUNTER_EXPORT)
        .and_then(|e| e.into_global())
        .expect("counter export");
    global.get(&mut *caller).unwrap_i64()
}

impl Run {
    fn new(wasm: &[u8], counter: Counter) -> Run {
        let instrumented = instrument_with(wasm, counter).expect("instrumentation succeeds");
        assert_eq!(
            instrumented.counter, counter,
            "no fallback for the test modules"
        );
        let engine = Engine::default();
        let module =
            Module::new(&engine, &instrumented.wasm).expect("instrumented module compiles");
        let mut linker = Linker::new(&engine);
        linker
            .func_wrap("__", "out_of_instructions", || -> wasmtime::Result<()> {
                Err(wasmtime::Error::msg("out of instructions"))
            })
            .unwrap();
        // The heap marks' host call: these modules count instructions, not pages.
        linker
            .func_wrap(
                "__",
                icbench::engine::instrument::HEAP_TOUCH_IMPORT,
                |_: u64, _: u64, _: i32, _: u64| {},
            )
            .unwrap();
        match counter {
            Counter::Global => {
                linker
                    .func_wrap("env", "observe", |mut caller: Caller<'_, State>| {
                        let counter = counter_of(&mut caller);
                        caller.data_mut().seen.push(counter);
                    })
                    .unwrap();
                linker.func_wrap("env", "add1", |x: i32| x + 1).unwrap();
            }
            // Imports take the counter as an extra last argument and return it.
            Counter::Local => {
                linker
                    .func_wrap(
                        "env",
                        "observe",
                        |mut caller: Caller<'_, State>, counter: i64| {
                            caller.data_mut().seen.push(counter);
                            counter
                        },
                    )
                    .unwrap();
                linker
                    .func_wrap("env", "add1", |x: i32, counter: i64| (x + 1, counter))
                    .unwrap();
            }
        }
        let mut store = Store::new(&engine, State::default());
        let instance = linker
            .instantiate(&mut store, &module)
            .expect("instantiation succeeds");
        Run {
            store,
            instance,
            instrumented,
        }
    }

    fn global(&mut self, name: &str) -> wasmtime::Global {
        self.instance
            .get_global(&mut self.store, name)
            .unwrap_or_else(|| panic!("export {name}"))
    }

    fn call_with(&mut self, start: i64, name: &str, args: &[Val]) -> wasmtime::Result<Vec<Val>> {
        let counter = self.global(INSTRUCTION_COUNTER_EXPORT);
        counter.set(&mut self.store, Val::I64(start)).unwrap();
        let func = self
            .instance
            .get_func(&mut self.store, name)
            .unwrap_or_else(|| panic!("export {name}"));
        let mut results = vec![Val::I32(0); func.ty(&self.store).results().len()];
        let outcome = func.call(&mut self.store, args, &mut results);
        // A failed check of the local counter sets the flag and traps with `unreachable`.
        let flag = self.global(OUT_OF_INSTRUCTIONS_FLAG_EXPORT);
        if outcome.is_err() && flag.get(&mut self.store).unwrap_i32() != 0 {
            flag.set(&mut self.store, Val::I32(0)).unwrap();
            return Err(wasmtime::Error::msg("out of instructions"));
        }
        outcome.map(|()| results)
    }
}

impl Harness {
    fn new(wat: &str) -> Harness {
        let wasm = wat::parse_str(wat).expect("test WAT parses");
        let runs = [
            Run::new(&wasm, Counter::Global),
            Run::new(&wasm, Counter::Local),
        ];
        assert_eq!(
            runs[0].instrumented.wasm_instruction_count,
            runs[1].instrumented.wasm_instruction_count,
            "the compile cost does not depend on the counter placement"
        );
        Harness { runs }
    }

    /// The replica's instrumentation of the module.
    fn instrumented(&self) -> &Instrumented {
        &self.runs[0].instrumented
    }

    fn set_counter(&mut self, value: i64) {
        for run in &mut self.runs {
            let counter = run.global(INSTRUCTION_COUNTER_EXPORT);
            counter.set(&mut run.store, Val::I64(value)).unwrap();
        }
    }

    fn counter(&mut self) -> i64 {
        let [a, b] = &mut self.runs;
        let (a, b) = (
            a.global(INSTRUCTION_COUNTER_EXPORT)
                .get(&mut a.store)
                .unwrap_i64(),
            b.global(INSTRUCTION_COUNTER_EXPORT)
                .get(&mut b.store)
                .unwrap_i64(),
        );
        assert_eq!(a, b, "counter: Global {a}, Local {b}");
        a
    }

    /// Counter values the host saw at `env.observe`.
    fn seen(&self) -> Vec<i64> {
        let (a, b) = (
            &self.runs[0].store.data().seen,
            &self.runs[1].store.data().seen,
        );
        assert_eq!(a, b, "counters seen by the host differ");
        a.clone()
    }

    /// Calls `name` with the counter set to `start`; returns the results or the trap.
    fn call_with(&mut self, start: i64, name: &str, args: &[Val]) -> wasmtime::Result<Vec<Val>> {
        let a = self.runs[0].call_with(start, name, args);
        let b = self.runs[1].call_with(start, name, args);
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(format!("{x:?}"), format!("{y:?}"), "results differ"),
            (Err(x), Err(y)) => assert_eq!(
                is_out_of_instructions(x),
                is_out_of_instructions(y),
                "traps differ: {x:?} vs {y:?}"
            ),
            _ => panic!("outcomes differ: Global {a:?}, Local {b:?}"),
        }
        self.counter();
        self.seen();
        a
    }

    /// Calls `name` with the counter at `LIMIT`; returns the instructions used and the results.
    fn run(&mut self, name: &str, args: &[Val]) -> (u64, Vec<Val>) {
        let results = self
            .call_with(LIMIT, name, args)
            .unwrap_or_else(|e| panic!("{name} trapped: {e:?}"));
        ((LIMIT - self.counter()) as u64, results)
    }

    /// [`Self::run`] of a function with one i32 result: the instructions used and it.
    fn run_i32(&mut self, name: &str, args: &[Val]) -> (u64, i32) {
        let (used, results) = self.run(name, args);
        (used, i32v(&results))
    }

    fn used(&mut self, name: &str, args: &[Val]) -> u64 {
        self.run(name, args).0
    }

    /// `budget` is exactly enough for `name`: with it the counter ends at 0, with one
    /// less the call runs out of instructions.
    fn assert_exact_budget(&mut self, budget: i64, name: &str, args: &[Val]) {
        self.call_with(budget, name, args)
            .expect("exact budget passes");
        assert_eq!(self.counter(), 0);
        let err = self.call_with(budget - 1, name, args).unwrap_err();
        assert!(is_out_of_instructions(&err), "{err:?}");
    }
}

fn is_out_of_instructions(e: &wasmtime::Error) -> bool {
    format!("{e:?}").contains("out of instructions")
}

fn i32v(results: &[Val]) -> i32 {
    results[0].unwrap_i32()
}

#[test]
fn empty_function() {
    let mut h = Harness::new(r#"(module (func (export "f")))"#);
    // entry 1 + end 0 = 1
    assert_eq!(h.used("f", &[]), 1);
}

#[test]
fn straight_line() {
    let mut h =
        Harness::new(r#"(module (func (export "f") i32.const 1 i32.const 1 i32.add drop))"#);
    // entry 1 + i32.const 1 + i32.const 1 + i32.add 1 + drop 1 + end 0 = 5
    assert_eq!(h.used("f", &[]), 5);
}

/// Returns 10 for a non-zero argument, else 21.
const IF_ELSE: &str = r#"(module
    (func (export "f") (param i32) (result i32)
      local.get 0
      if (result i32)
        i32.const 10
      else
        i32.const 20
        i32.const 1
        i32.add
      end))"#;

#[test]
fn if_else_arms() {
    let mut h = Harness::new(IF_ELSE);
    // entry segment: 1 + local.get 1 + if 2 = 4
    // then arm (non-reentrant): i32.const 1 + else 0 = 1; the segment after the inner end
    // holds only the final end (0) and is not injected.
    assert_eq!(h.run_i32("f", &[Val::I32(1)]), (4 + 1, 10));
    // else arm (starts after `else`): i32.const 1 + i32.const 1 + i32.add 1 + end 0 = 3
    assert_eq!(h.run_i32("f", &[Val::I32(0)]), (4 + 3, 21));
}

#[test]
fn if_without_else_and_early_return() {
    let mut h = Harness::new(
        r#"(module
            (func (export "f") (param i32) (result i32)
              local.get 0
              if
                i32.const 1
                return
              end
              i32.const 2))"#,
    );
    // entry: 1 + local.get 1 + if 2 = 4
    // then: i32.const 1 + return 1 = 2
    assert_eq!(h.used("f", &[Val::I32(1)]), 4 + 2);
    // after the inner end: i32.const 1 + end 0 = 1 (the inner end's own segment is 0)
    assert_eq!(h.used("f", &[Val::I32(0)]), 4 + 1);
}

const LOOP: &str = r#"(module
    (func (export "f") (param $n i32)
      (local $i i32)
      loop $l
        local.get $i
        i32.const 1
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $l
      end))"#;

#[test]
fn loop_charges_per_iteration() {
    let mut h = Harness::new(LOOP);
    // entry: 1 + loop 0 = 1
    // loop body (reentrant, paid per iteration): local.get 1 + i32.const 1 + i32.add 1
    //   + local.tee 1 + local.get 1 + i32.lt_u 1 + br_if 2 = 8
    // after the loop: end 0 + end 0 (not injected)
    assert_eq!(h.used("f", &[Val::I32(1)]), 1 + 8);
    assert_eq!(h.used("f", &[Val::I32(10)]), 1 + 8 * 10);
}

#[test]
fn calls_charge_the_callee_entry() {
    let mut h = Harness::new(
        r#"(module
            (type $t (func (result i32)))
            (table 1 funcref)
            (elem (i32.const 0) $callee)
            (func $callee (result i32) i32.const 7)
            (func (export "direct") (result i32) call $callee)
            (func (export "indirect") (result i32) i32.const 0 call_indirect (type $t)))"#,
    );
    // callee: entry 1 + i32.const 1 + end 0 = 2
    // direct: entry 1 + call 5 + end 0 = 6, + callee 2 = 8
    assert_eq!(h.run_i32("direct", &[]), (8, 7));
    // indirect: entry 1 + i32.const 1 + call_indirect 10 + end 0 = 12, + callee 2 = 14
    assert_eq!(h.run_i32("indirect", &[]), (14, 7));
}

#[test]
fn br_table_costs_two_whatever_its_size() {
    let mut h = Harness::new(
        r#"(module
            (func (export "small") (param i32)
              block
                local.get 0
                br_table 0 0
              end)
            (func (export "large") (param i32)
              block block block block
                local.get 0
                br_table 0 1 2 3 3 2 1 0 0
              end end end end))"#,
    );
    // entry: 1 + block 0 + local.get 1 + br_table 2 = 4; everything after is `end` (0)
    assert_eq!(h.used("small", &[Val::I32(0)]), 4);
    // entry: 1 + 4 × block 0 + local.get 1 + br_table 2 = 4
    for target in [0, 3, 7, 100] {
        assert_eq!(h.used("large", &[Val::I32(target)]), 4);
    }
}

#[test]
fn division_and_remainder_cost_ten() {
    let mut h = Harness::new(
        r#"(module
            (func (export "f") (result i64)
              i64.const 100 i64.const 7 i64.div_s i64.const 3 i64.rem_u))"#,
    );
    // entry 1 + i64.const 1 + i64.const 1 + div_s 10 + i64.const 1 + rem_u 10 + end 0 = 24
    let (used, r) = h.run("f", &[]);
    assert_eq!((used, r[0].unwrap_i64()), (24, 2));
}

#[test]
fn float_operators_with_special_costs() {
    let mut h = Harness::new(
        r#"(module
            (func (export "arith") (result f64)
              f64.const 4 f64.sqrt
              f64.const 1 f64.min
              f64.const 3 f64.div
              f32.const 1 f32.const 2 f32.max f64.promote_f32
              f64.add)
            (func (export "conv") (result i32)
              i64.const 5 f64.convert_i64_u i32.trunc_f64_s)
            (func (export "cmp") (result i32)
              f32.const 1 f32.const 2 f32.lt))"#,
    );
    // entry 1 + f64.const 1 + f64.sqrt 8 + f64.const 1 + f64.min 18 + f64.const 1
    //   + f64.div 5 + f32.const 1 + f32.const 1 + f32.max 18 + f64.promote_f32 1
    //   + f64.add 2 = 58
    assert_eq!(h.used("arith", &[]), 58);
    // entry 1 + i64.const 1 + f64.convert_i64_u 16 + i32.trunc_f64_s 20 = 38
    assert_eq!(h.run_i32("conv", &[]), (38, 5));
    // entry 1 + f32.const 1 + f32.const 1 + f32.lt 3 = 6
    assert_eq!(h.used("cmp", &[]), 6);
}

const BULK: &str = r#"(module
    (memory 1)
    (data $d "0123456789")
    (table $t 10 funcref)
    (func $a)
    (elem (table $t) (i32.const 0) func $a $a $a)
    (func (export "copy") (param $n i32)
      i32.const 0 i32.const 100 local.get $n memory.copy)
    (func (export "fill") (param $n i32)
      i32.const 0 i32.const 255 local.get $n memory.fill)
    (func (export "init") (param $n i32)
      i32.const 0 i32.const 0 local.get $n memory.init $d)
    (func (export "table_copy") (param $n i32)
      i32.const 5 i32.const 0 local.get $n table.copy $t $t)
    (func (export "table_fill") (param $n i32)
      i32.const 0 ref.null func local.get $n table.fill $t))"#;

#[test]
fn bulk_memory_charges_per_byte() {
    let mut h = Harness::new(BULK);
    // entry 1 + i32.const 1 + i32.const 1 + local.get 1 + memory.copy 100 + end 0 = 104,
    // plus n at run time
    assert_eq!(h.used("copy", &[Val::I32(0)]), 104);
    assert_eq!(h.used("copy", &[Val::I32(1000)]), 104 + 1000);
    // same shape for memory.fill
    assert_eq!(h.used("fill", &[Val::I32(0)]), 104);
    assert_eq!(h.used("fill", &[Val::I32(4096)]), 104 + 4096);
    // memory.init: 104 + n
    assert_eq!(h.used("init", &[Val::I32(10)]), 104 + 10);
}

#[test]
fn bulk_table_charges_per_element() {
    let mut h = Harness::new(BULK);
    // entry 1 + i32.const 1 + i32.const 1 + local.get 1 + table.copy 100 = 104, + n elements
    assert_eq!(h.used("table_copy", &[Val::I32(3)]), 104 + 3);
    // entry 1 + i32.const 1 + ref.null 1 + local.get 1 + table.fill 100 = 104, + n elements
    assert_eq!(h.used("table_fill", &[Val::I32(10)]), 104 + 10);
}

#[test]
fn out_of_instructions_exactly_below_zero() {
    let mut h =
        Harness::new(r#"(module (func (export "f") i32.const 1 i32.const 1 i32.add drop))"#);
    // cost 5, checked at entry: a counter of exactly 5 ends at 0 and passes; one less
    // goes to -1 and traps.
    h.assert_exact_budget(5, "f", &[]);
}

#[test]
fn out_of_instructions_at_loop_header() {
    let mut h = Harness::new(LOOP);
    // 10 iterations cost 1 + 8 × 10 = 81; with 80, the 10th loop header takes the
    // counter to -1.
    h.assert_exact_budget(81, "f", &[Val::I32(10)]);
}

#[test]
fn out_of_instructions_in_bulk_operation() {
    let mut h = Harness::new(BULK);
    // memory.fill of 1000 bytes costs 104 + 1000; the helper checks after subtracting.
    h.assert_exact_budget(1104, "fill", &[Val::I32(1000)]);
}

#[test]
fn bulk_charge_precedes_the_segment_charge_at_the_same_position() {
    // The then-arm's segment starts right at `memory.fill`. The replica records the dynamic
    // point first and sorts stably, so the per-byte charge (and its check) runs before the
    // then-arm's static charge (100), which is not checked.
    let mut h = Harness::new(
        r#"(module
            (memory 1)
            (func (export "f") (param $n i32)
              i32.const 0 i32.const 0 local.get $n
              i32.const 1
              if (param i32 i32 i32)
                memory.fill
              else
                drop drop drop
              end))"#,
    );
    // entry: 1 + i32.const 1 + i32.const 1 + local.get 1 + i32.const 1 + if 2 = 7
    // then-arm: memory.fill 100 + else 0 = 100; plus n = 50 at run time
    assert_eq!(h.used("f", &[Val::I32(50)]), 7 + 100 + 50);
    // With exactly 7 + 50 the helper's check sees 0 and passes; the static 100 is unchecked.
    h.call_with(7 + 50, "f", &[Val::I32(50)])
        .expect("dynamic check passes at 0");
    assert_eq!(h.counter(), -100);
}

#[test]
fn non_reentrant_segments_are_not_checked() {
    let mut h = Harness::new(IF_ELSE);
    // entry segment 4 is checked (4 - 4 = 0 passes); the else segment (3) is not checked,
    // so the function returns normally with the counter at -3.
    let r = h
        .call_with(4, "f", &[Val::I32(0)])
        .expect("no check after the entry");
    assert_eq!((i32v(&r), h.counter()), (21, -3));
}

#[test]
fn infinite_loop_runs_out_of_instructions() {
    let mut h = Harness::new(r#"(module (func (export "spin") loop br 0 end))"#);
    // entry 1, then the loop body (br 2) is charged and checked on every iteration.
    let err = h.call_with(LIMIT, "spin", &[]).unwrap_err();
    assert!(is_out_of_instructions(&err), "{err:?}");
    // The first header check that fails is the one that goes below zero: 1 + 2k > LIMIT.
    assert_eq!(h.counter(), -1);
}

#[test]
fn import_call_is_charged_in_the_callers_segment() {
    let mut h = Harness::new(
        r#"(module
            (import "env" "observe" (func $observe))
            (func (export "f")
              i32.const 1 drop
              call $observe
              i32.const 2 i32.const 3 i32.add drop))"#,
    );
    // One segment: entry 1 + i32.const 1 + drop 1 + call 5 + i32.const 1 + i32.const 1
    //   + i32.add 1 + drop 1 + end 0 = 12, all charged before the call runs.
    assert_eq!(h.used("f", &[]), 12);
    assert_eq!(h.seen(), vec![LIMIT - 12]);
}

#[test]
fn counter_at_a_wasm_trap_is_exact() {
    let mut h = Harness::new(
        r#"(module
            (memory 1)
            (func $load (param i32) (result i32) local.get 0 i32.load)
            (func (export "oob") (result i32)
              i32.const 1 drop
              i32.const 70000 call $load)
            (func (export "div") (param i32) (result i32)
              i32.const 1 local.get 0 i32.div_u))"#,
    );
    // oob: entry 1 + i32.const 1 + drop 1 + i32.const 1 + call 5 = 9, charged before the
    // call; $load: entry 1 + local.get 1 + i32.load 1 = 3, charged before the load traps.
    // The local counter writes the global back before the call, not before the load
    // (`stale_at_heap_traps`: the engine counts such a message again with the global one).
    for (run, charged) in h.runs.iter_mut().zip([9 + 3, 9]) {
        let err = run.call_with(LIMIT, "oob", &[]).unwrap_err();
        assert!(!is_out_of_instructions(&err), "{err:?}");
        let counter = run.global(INSTRUCTION_COUNTER_EXPORT);
        assert_eq!(LIMIT - counter.get(&mut run.store).unwrap_i64(), charged);
    }
    // div by 0: entry 1 + i32.const 1 + local.get 1 + i32.div_u 10 = 13.
    let err = h.call_with(LIMIT, "div", &[Val::I32(0)]).unwrap_err();
    assert!(!is_out_of_instructions(&err), "{err:?}");
    assert_eq!(LIMIT - h.counter(), 13);
    assert_eq!(h.run_i32("div", &[Val::I32(1)]), (13, 1));
}

#[test]
fn own_unreachable_below_zero_is_not_out_of_instructions() {
    let mut h =
        Harness::new(r#"(module (func (export "f") (param i32) local.get 0 if unreachable end))"#);
    // The checked entry segment costs 4 (base 1 + local.get 1 + if 2) and passes at 0;
    // the then-arm (unreachable 1) is unchecked, so the module's own trap is what fails.
    let err = h.call_with(4, "f", &[Val::I32(1)]).unwrap_err();
    assert!(!is_out_of_instructions(&err), "{err:?}");
    assert_eq!(h.counter(), -1);
}

#[test]
fn indirect_calls_and_tail_calls_carry_the_counter() {
    let mut h = Harness::new(
        r#"(module
            (import "env" "observe" (func $observe))
            (type $t (func (param i32) (result i32)))
            (table 2 funcref)
            (elem (i32.const 0) $inc $tail)
            (func $inc (type $t) local.get 0 i32.const 1 i32.add)
            (func $tail (type $t) call $observe local.get 0 return_call $inc)
            (func (export "f") (param i32) (result i32)
              local.get 0 i32.const 1 call_indirect (type $t)))"#,
    );
    // f: entry 1 + local.get 1 + i32.const 1 + call_indirect 10 = 13; $tail's segment up to
    // its return_call: 1 + call 5 + local.get 1 + return_call 3 = 10, charged before the host
    // call sees the counter; $inc: 1 + local.get 1 + i32.const 1 + i32.add 1 = 4.
    assert_eq!(h.run_i32("f", &[Val::I32(41)]), (13 + 10 + 4, 42));
    assert_eq!(h.seen(), vec![LIMIT - 23]);
}

#[test]
fn an_import_in_a_table_falls_back_to_the_global_counter() {
    let wasm = wat::parse_str(
        r#"(module
            (import "env" "add1" (func $add1 (param i32) (result i32)))
            (table 1 funcref)
            (elem (i32.const 0) $add1)
            (func (export "f") (param i32) (result i32)
              local.get 0 i32.const 0 call_indirect (param i32) (result i32)))"#,
    )
    .unwrap();
    assert_eq!(instrument(&wasm).unwrap().counter, Counter::Global);
    let plain = wat::parse_str(r#"(module (func (export "f")))"#).unwrap();
    assert_eq!(instrument(&plain).unwrap().counter, Counter::Local);
}

/// Defined functions take an `i32` argument past the fourth integer one as an `i64` (a
/// performance change, `call_params` in instrument.rs): every way of calling such a function
/// must pass each argument through unchanged, at the replica's counts.
#[test]
fn arguments_past_the_registers_pass_through_every_kind_of_call() {
    const WAT: &str = r#"(module
            (type $wide (func (param i32 i64 f32 i32 i32 i32 f64 i32 i32) (result i64)))
            (table 2 funcref)
            (elem (i32.const 0) $mix $tail)
            (func $mix (type $wide)
              local.get 8 i32.const 1 i32.add local.set 8
              local.get 0 i64.extend_i32_u
              local.get 1 i64.const 1 i64.shl i64.xor
              local.get 2 i32.reinterpret_f32 i64.extend_i32_u i64.const 2 i64.shl i64.xor
              local.get 3 i64.extend_i32_u i64.const 3 i64.shl i64.xor
              local.get 4 i64.extend_i32_u i64.const 4 i64.shl i64.xor
              local.get 5 local.tee 5 i64.extend_i32_u i64.const 5 i64.shl i64.xor
              local.get 6 i64.reinterpret_f64 i64.const 6 i64.shl i64.xor
              local.get 7 i64.extend_i32_u i64.const 7 i64.shl i64.xor
              local.get 8 i64.extend_i32_u i64.const 8 i64.shl i64.xor)
            (func $tail (type $wide)
              local.get 0 local.get 1 local.get 2 local.get 3 local.get 4
              local.get 5 local.get 6 local.get 7 local.get 8
              return_call $mix)
            (func (export "direct") (type $wide)
              local.get 0 local.get 1 local.get 2 local.get 3 local.get 4
              local.get 5 local.get 6 local.get 7 local.get 8
              call $mix)
            (func (export "indirect") (type $wide)
              local.get 0 local.get 1 local.get 2 local.get 3 local.get 4
              local.get 5 local.get 6 local.get 7 local.get 8
              i32.const 1 call_indirect (type $wide))
            (func (export "tail_indirect") (type $wide)
              local.get 0 local.get 1 local.get 2 local.get 3 local.get 4
              local.get 5 local.get 6 local.get 7 local.get 8
              i32.const 0 return_call_indirect (type $wide)))"#;
    let mut h = Harness::new(WAT);
    let (p0, p1, p2, p3, p4, p5, p6, p7, p8) = (
        -1i32,
        0x0123_4567_89ab_cdefi64,
        1.5f32,
        -2i32,
        i32::MAX,
        -3i32,
        -0.25f64,
        -4i32,
        -1i32,
    );
    let args = [
        Val::I32(p0),
        Val::I64(p1),
        Val::F32(p2.to_bits()),
        Val::I32(p3),
        Val::I32(p4),
        Val::I32(p5),
        Val::F64(p6.to_bits()),
        Val::I32(p7),
        Val::I32(p8),
    ];
    let u = |x: i32| u64::from(x as u32);
    let expected = u(p0)
        ^ (p1 as u64) << 1
        ^ u64::from(p2.to_bits()) << 2
        ^ u(p3) << 3
        ^ u(p4) << 4
        ^ u(p5) << 5
        ^ p6.to_bits() << 6
        ^ u(p7) << 7
        ^ u(p8.wrapping_add(1)) << 8;
    // $mix: entry 1 + 4 (the add and set) + 2 + 4 + 6 + 5 + 5 + 6 (with the tee) + 5 + 5 + 5
    // = 48. Callers: entry 1 + nine local.get 9, then `call` 5 (15), `i32.const` 1 and
    // `call_indirect` 10 (21) to $tail (1 + 9 + `return_call` 3 = 13), or `i32.const` 1 and
    // `return_call_indirect` 60 (71).
    for (name, used) in [
        ("direct", 15 + 48),
        ("indirect", 21 + 13 + 48),
        ("tail_indirect", 71 + 48),
    ] {
        let (charged, results) = h.run(name, &args);
        assert_eq!(charged, used, "{name}");
        assert_eq!(results[0].unwrap_i64() as u64, expected, "{name}");
    }
    // The local counter's module: no function the code calls takes an i32 past the fourth
    // integer (the exports' wrappers, which only the host calls, keep the input's types).
    let input_types = wasmparser::Parser::new(0)
        .parse_all(&wat::parse_str(WAT).unwrap())
        .find_map(|payload| match payload.unwrap() {
            wasmparser::Payload::TypeSection(reader) => Some(reader.count()),
            _ => None,
        })
        .unwrap();
    let mut types = Vec::new();
    let mut checked = 0;
    for payload in wasmparser::Parser::new(0).parse_all(&h.runs[1].instrumented.wasm) {
        match payload.unwrap() {
            wasmparser::Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    types.push(ty.unwrap());
                }
            }
            wasmparser::Payload::FunctionSection(reader) => {
                for ty in reader {
                    let ty = ty.unwrap();
                    if ty < input_types {
                        continue;
                    }
                    let ints: Vec<_> = types[ty as usize]
                        .params()
                        .iter()
                        .filter(|p| {
                            matches!(p, wasmparser::ValType::I32 | wasmparser::ValType::I64)
                        })
                        .collect();
                    assert!(
                        !ints.iter().skip(4).any(|p| **p == wasmparser::ValType::I32),
                        "an i32 past the fourth integer parameter: {ints:?}"
                    );
                    checked += 1;
                }
            }
            _ => {}
        }
    }
    assert!(checked >= 5, "{checked} defined functions checked");
}
