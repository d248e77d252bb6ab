//! The replica's own metering ([`Counter::Global`]): each body copied verbatim but for
//! moved function indices, with the segment charges on the exported counter global in front
//! of their operators.

use std::ops::Range;

use wasm_encoder::{BlockType, Encode, Instruction};
use wasmparser::Operator;

use super::emitter::{sink, Emitter};
use super::probes::CounterIn;
use super::segments::{Injection, Scope, SizeOperand};
#[cfg(doc)]
use super::Counter;

impl<'a> Emitter<'a, '_> {
    /// The replica's code: locals and operators copied verbatim except where a function
    /// index changes, the injections in front of their operators. With profiling, the body
    /// runs inside a block of the function's result type (so that a branch out of the body
    /// passes the exit probe too) and calls and returns get their probes.
    pub(super) fn emit_global_counter(
        &self,
        out: &mut Vec<u8>,
        content: Range<usize>,
        ops_start: usize,
    ) {
        let wasm = self.wasm;
        let nfi = self.info.num_func_imports;
        let g = self.counter_global;
        out.extend_from_slice(&wasm[content.start..ops_start]);
        if self.profile {
            self.enter_body(out, CounterIn::Global(g));
        }
        let mut run_start = ops_start;
        let mut next_point = 0;
        for i in 0..self.ops.len() {
            let at = self.offsets[i];
            while let Some(point) = self.points.get(next_point).filter(|p| p.position == i) {
                next_point += 1;
                self.injection(point.injection, out, wasm, run_start, at);
                run_start = at;
            }
            let op = &self.ops[i];
            if self.profile {
                let probed = match *op {
                    Operator::Call { function_index } if function_index < nfi => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_enter(out, function_index, CounterIn::Global(g));
                        sink(out).call(function_index);
                        self.probe_exit(out, CounterIn::Global(g));
                        true
                    }
                    Operator::ReturnCall { function_index } if function_index < nfi => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_enter(out, function_index, CounterIn::Global(g));
                        sink(out).call(function_index);
                        // The call's exit, then this function's.
                        self.probe_exit(out, CounterIn::Global(g));
                        self.probe_exit(out, CounterIn::Global(g));
                        sink(out).return_();
                        true
                    }
                    Operator::ReturnCall { .. }
                    | Operator::ReturnCallIndirect { .. }
                    | Operator::Return => {
                        out.extend_from_slice(&wasm[run_start..at]);
                        self.probe_exit(out, CounterIn::Global(g));
                        match self.remapped(op) {
                            Some(instruction) => instruction.encode(out),
                            None => out.extend_from_slice(&wasm[at..self.offsets[i + 1]]),
                        }
                        true
                    }
                    _ => false,
                };
                if probed {
                    run_start = self.offsets[i + 1];
                    continue;
                }
            }
            if let Some(instruction) = self.remapped(op) {
                out.extend_from_slice(&wasm[run_start..at]);
                instruction.encode(out);
                run_start = self.offsets[i + 1];
            }
        }
        debug_assert_eq!(
            next_point,
            self.points.len(),
            "injection after the final end"
        );
        out.extend_from_slice(&wasm[run_start..content.end]);
        if self.profile {
            // The original final `end` closed the block.
            self.probe_exit(out, CounterIn::Global(g));
            sink(out).end();
        }
    }

    /// Function indices move up past the injected imports.
    pub(super) fn remapped(&self, op: &Operator) -> Option<Instruction<'static>> {
        let nfi = self.info.num_func_imports;
        match *op {
            Operator::Call { function_index } if function_index >= nfi => {
                Some(Instruction::Call(self.shift.func(function_index)))
            }
            Operator::ReturnCall { function_index } if function_index >= nfi => {
                Some(Instruction::ReturnCall(self.shift.func(function_index)))
            }
            Operator::RefFunc { function_index } if function_index >= nfi => {
                Some(Instruction::RefFunc(self.shift.func(function_index)))
            }
            _ => None,
        }
    }

    /// Writes the pending verbatim bytes `wasm[run_start..at]` and then the replica's
    /// injected code (nothing for a skipped zero-cost segment).
    fn injection(
        &self,
        injection: Injection,
        out: &mut Vec<u8>,
        wasm: &[u8],
        run_start: usize,
        at: usize,
    ) {
        out.extend_from_slice(&wasm[run_start..at]);
        let counter = self.counter_global;
        let mut sink = wasm_encoder::InstructionSink::new(out);
        match injection {
            Injection::Static { scope, cost } => {
                if scope == Scope::NonReentrant && cost == 0 {
                    return;
                }
                sink.global_get(counter)
                    .i64_const(cost as i64)
                    .i64_sub()
                    .global_set(counter);
                if scope == Scope::Reentrant {
                    sink.global_get(counter)
                        .i64_const(0)
                        .i64_lt_s()
                        .if_(BlockType::Empty)
                        .call(self.ooi_func)
                        .end();
                }
            }
            Injection::Dynamic(SizeOperand::I64) => {
                sink.call(self.decrement_func);
            }
            Injection::Dynamic(SizeOperand::I32) => {
                // The helper returns its argument, so wrapping back is lossless.
                sink.i64_extend_i32_u()
                    .call(self.decrement_func)
                    .i32_wrap_i64();
            }
        }
    }
}
