//! The default metering, [`Counter::Local`]: each function keeps the counter in a local,
//! takes it as an extra last parameter and returns it as an extra last result, and writes it
//! to the global only where the host or a trap can observe it ([`super::traps`]). Charges
//! are the replica's, at the replica's points ([`super::segments`]).

use std::ops::Range;

use wasm_encoder::reencode::Reencode;
use wasm_encoder::{BlockType, Encode, ValType};
use wasmparser::{FunctionBody, Operator};

#[cfg(doc)]
use super::calls::call_params;
use super::calls::widened;
use super::emitter::{sink, Emitter};
use super::heap_marks::{scalar_access, Bulk, MarkLocals};
use super::probes::CounterIn;
use super::segments::{Injection, Scope, SizeOperand};
use super::traps::{cannot_trap, stale_at_heap_traps};
use super::{invalid, reencode_error, Counter, InstrumentError};
use crate::cost::is_scalar_load_or_store;

/// How many of `types` there are of each type, in order of first appearance.
fn count_by_type(types: &[ValType]) -> Vec<(ValType, u32)> {
    let mut counts: Vec<(ValType, u32)> = Vec::new();
    for &ty in types {
        match counts.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, n)) => *n += 1,
            None => counts.push((ty, 1)),
        }
    }
    counts
}

/// Where a body's locals are with the local counter.
struct Locals {
    /// The counter: the parameter after the original ones.
    counter: u32,
    /// The original parameters (declared locals move up by one, past the counter).
    params: u32,
    /// Scratch locals for the table index of an indirect call, and an i64 one.
    scratch32: u32,
    scratch64: u32,
    /// Per parameter: the i32 copy the body reads and writes a widened parameter in.
    shadows: Vec<Option<u32>>,
    /// Per type: the first of the locals calls to widened signatures set arguments aside in.
    aside: Vec<(ValType, u32)>,
    /// The heap marks' scratch locals, when the module has them.
    marks: Option<MarkLocals>,
}

impl Locals {
    /// Where the body's local `local` is now: declared ones one up (after the counter),
    /// widened parameters in their i32 copies.
    fn moved(&self, local: u32) -> u32 {
        match self.shadows.get(local as usize) {
            Some(Some(shadow)) => *shadow,
            _ if local >= self.params => local + 1,
            _ => local,
        }
    }
}

impl<'a> Emitter<'a, '_> {
    /// [`Counter::Local`]: the counter is parameter `c` (after the original parameters, so
    /// declared locals move up by one); two scratch locals are appended for the table index
    /// of indirect calls. The body runs inside a block of the function's result type, after
    /// which the counter is pushed as the extra result, so that branches to the function
    /// label keep their meaning.
    pub(super) fn emit_local_counter(
        &self,
        out: &mut Vec<u8>,
        body: &FunctionBody<'a>,
        content: Range<usize>,
        ops_start: usize,
    ) -> Result<(), InstrumentError> {
        let (locals, groups) = self.local_layout(body)?;
        (groups.len() as u32).encode(out);
        for (count, ty) in &groups {
            count.encode(out);
            ty.encode(out);
        }
        for (param, shadow) in (0..).zip(&locals.shadows) {
            if let Some(shadow) = *shadow {
                sink(out).local_get(param).i32_wrap_i64().local_set(shadow);
            }
        }
        let c = locals.counter;
        self.enter_body(out, CounterIn::Local(c));
        let mut rewrite = LocalBody {
            emitter: self,
            locals,
            run_start: ops_start,
            // Whether the counter local may differ from the global.
            dirty: true,
            heap_traps_stale: stale_at_heap_traps(Counter::Local, self.profile),
        };
        let mut next_point = 0;
        for i in 0..self.ops.len() {
            while let Some(point) = self.points.get(next_point).filter(|p| p.position == i) {
                next_point += 1;
                rewrite.copy_to(out, self.offsets[i]);
                rewrite.inject(out, point.injection);
            }
            rewrite.operator(out, i);
        }
        debug_assert_eq!(
            next_point,
            self.points.len(),
            "injection after the final end"
        );
        // The original final `end` closes the block; the function returns the counter too.
        out.extend_from_slice(&self.wasm[rewrite.run_start..content.end]);
        self.probe_exit(out, CounterIn::Local(c));
        sink(out).local_get(c).end();
        Ok(())
    }

    /// The body's locals with the counter's (see [`Locals`]), and the local declarations
    /// that make them.
    fn local_layout(
        &self,
        body: &FunctionBody<'a>,
    ) -> Result<(Locals, Vec<(u32, ValType)>), InstrumentError> {
        let signature = self.func_type(self.info.num_func_imports + self.body_index as u32);
        let params = signature.params.len() as u32;
        let mut groups = Vec::new();
        let mut declared = 0u32;
        for group in body.get_locals_reader().map_err(invalid)? {
            let (count, ty) = group.map_err(invalid)?;
            let ty = wasm_encoder::reencode::RoundtripReencoder
                .val_type(ty)
                .map_err(reencode_error)?;
            declared += count;
            groups.push((count, ty));
        }
        groups.push((1, ValType::I32));
        groups.push((1, ValType::I64));
        let scratch32 = params + 1 + declared;
        let scratch64 = scratch32 + 1;
        // The widened parameters arrive as i64: the body reads and writes an i32 copy.
        let mut next_local = scratch64 + 1;
        let shadows: Vec<Option<u32>> = widened(&signature.params)
            .map(|w| {
                w.then(|| {
                    groups.push((1, ValType::I32));
                    next_local += 1;
                    next_local - 1
                })
            })
            .collect();
        let aside: Vec<(ValType, u32)> = self
            .set_aside()
            .into_iter()
            .map(|(ty, n)| {
                groups.push((n, ty));
                next_local += n;
                (ty, next_local - n)
            })
            .collect();
        let marks = self.marks.map(|marks| {
            let (locals, types) = MarkLocals::declare(next_local, marks.heap64);
            groups.extend(types.map(|ty| (1, ty)));
            locals
        });
        let locals = Locals {
            counter: params,
            params,
            scratch32,
            scratch64,
            shadows,
            aside,
            marks,
        };
        Ok((locals, groups))
    }

    /// Calls to widened signatures set their arguments from the first widened one on aside
    /// and push them back widened: how many locals of each type the most any call sets
    /// aside needs.
    fn set_aside(&self) -> Vec<(ValType, u32)> {
        let mut aside: Vec<(ValType, u32)> = Vec::new();
        for op in &self.ops {
            let Some(ty) = self.called_type(op) else {
                continue;
            };
            let Some(first) = self.first_widened[ty as usize] else {
                continue;
            };
            for (param, n) in count_by_type(&self.signature(ty).params[first..]) {
                match aside.iter_mut().find(|(t, _)| *t == param) {
                    Some((_, have)) => *have = (*have).max(n),
                    None => aside.push((param, n)),
                }
            }
        }
        aside
    }

    /// Before a call to a widened signature: sets the arguments from the first widened one
    /// on aside and pushes them back, widened where the callee takes an i64.
    fn widen_arguments(&self, aside: &[(ValType, u32)], out: &mut Vec<u8>, call: &Operator) {
        let Some(ty) = self.called_type(call) else {
            return;
        };
        let Some(first) = self.first_widened[ty as usize] else {
            return;
        };
        let params = &self.signature(ty).params[first..];
        let mut used: Vec<(ValType, u32)> = aside.iter().map(|&(t, _)| (t, 0)).collect();
        let locals: Vec<u32> = params
            .iter()
            .map(|param| {
                let (slot, base) = used
                    .iter_mut()
                    .zip(aside)
                    .find(|((t, _), _)| t == param)
                    .map(|((_, k), &(_, base))| (k, base))
                    .expect("a local set aside for every type");
                *slot += 1;
                base + *slot - 1
            })
            .collect();
        let mut sink = sink(out);
        for &local in locals.iter().rev() {
            sink.local_set(local);
        }
        let widened: Vec<bool> = widened(&self.signature(ty).params).skip(first).collect();
        for (&local, widened) in locals.iter().zip(widened) {
            sink.local_get(local);
            if widened {
                sink.i64_extend_i32_u();
            }
        }
    }
}

/// One body's rewrite with the local counter: where the verbatim bytes not yet copied start
/// and whether the global is behind the local.
struct LocalBody<'e, 'a, 'i> {
    emitter: &'e Emitter<'a, 'i>,
    locals: Locals,
    run_start: usize,
    dirty: bool,
    heap_traps_stale: bool,
}

impl LocalBody<'_, '_, '_> {
    /// Brings the global up to date, if it may be behind.
    fn flush(&mut self, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.dirty) {
            sink(out)
                .local_get(self.locals.counter)
                .global_set(self.emitter.counter_global);
        }
    }

    /// Copies the verbatim bytes up to `at`.
    fn copy_to(&mut self, out: &mut Vec<u8>, at: usize) {
        out.extend_from_slice(&self.emitter.wasm[self.run_start..at]);
        self.run_start = at;
    }

    /// Copies the verbatim bytes before operator `i` and skips the operator itself, which
    /// the caller then writes in its new form.
    fn replace(&mut self, out: &mut Vec<u8>, i: usize) {
        self.copy_to(out, self.emitter.offsets[i]);
        self.run_start = self.emitter.offsets[i + 1];
    }

    /// [`Self::replace`] for a call, which also brings the global up to date: a callee's
    /// stack-overflow trap or a System API call sees it.
    fn replace_call(&mut self, out: &mut Vec<u8>, i: usize) {
        self.replace(out, i);
        self.flush(out);
    }

    /// The charge at a segment's start or of a bulk operation's size.
    fn inject(&mut self, out: &mut Vec<u8>, injection: Injection) {
        let em = self.emitter;
        let (c, g) = (self.locals.counter, em.counter_global);
        match injection {
            Injection::Static { scope, cost } => {
                // A new segment can be entered from several places.
                self.dirty = true;
                if scope == Scope::NonReentrant && cost == 0 {
                    return;
                }
                let mut sink = sink(out);
                sink.local_get(c).i64_const(cost as i64).i64_sub();
                if scope == Scope::NonReentrant {
                    sink.local_set(c);
                } else {
                    sink.local_tee(c)
                        .i64_const(0)
                        .i64_lt_s()
                        .if_(BlockType::Empty)
                        .local_get(c)
                        .global_set(g)
                        .i32_const(1)
                        .global_set(em.flag_global)
                        .unreachable()
                        .end();
                }
            }
            Injection::Dynamic(size) => {
                self.flush(out);
                let mut sink = sink(out);
                match size {
                    SizeOperand::I64 => sink.call(em.decrement_func),
                    SizeOperand::I32 => sink
                        .i64_extend_i32_u()
                        .call(em.decrement_func)
                        .i32_wrap_i64(),
                };
                sink.global_get(g).local_set(c);
            }
        }
    }

    /// Operator `i`: rewritten where it uses a moved local, a moved function or the
    /// counter, else kept verbatim (with the global brought up to date first if it can
    /// trap, the count at a trap being what the message is charged).
    fn operator(&mut self, out: &mut Vec<u8>, i: usize) {
        let em = self.emitter;
        let nfi = em.info.num_func_imports;
        let c = self.locals.counter;
        let op = &em.ops[i];
        if self.mark_checked(out, i) {
            return;
        }
        let moved = |local| self.locals.moved(local);
        match *op {
            Operator::Call { .. }
            | Operator::CallIndirect { .. }
            | Operator::ReturnCall { .. }
            | Operator::ReturnCallIndirect { .. } => self.call(out, i),
            Operator::LocalGet { local_index } if moved(local_index) != local_index => {
                self.replace(out, i);
                sink(out).local_get(self.locals.moved(local_index));
            }
            Operator::LocalSet { local_index } if moved(local_index) != local_index => {
                self.replace(out, i);
                sink(out).local_set(self.locals.moved(local_index));
            }
            Operator::LocalTee { local_index } if moved(local_index) != local_index => {
                self.replace(out, i);
                sink(out).local_tee(self.locals.moved(local_index));
            }
            Operator::Return => {
                self.replace(out, i);
                em.probe_exit(out, CounterIn::Local(c));
                sink(out).local_get(c).return_();
            }
            Operator::RefFunc { function_index } if function_index >= nfi => {
                self.replace(out, i);
                sink(out).ref_func(em.shift.func(function_index));
            }
            // Kept verbatim; if it can trap, the global is brought up to date first, except
            // before loads and stores ([`stale_at_heap_traps`]).
            _ if self.dirty
                && !cannot_trap(op)
                && !(self.heap_traps_stale && is_scalar_load_or_store(op)) =>
            {
                self.copy_to(out, em.offsets[i]);
                self.flush(out);
            }
            _ => {}
        }
    }

    /// Heap marks: the check before a load, store, `memory.copy` or `memory.fill` (after the
    /// global is brought up to date where the operator's trap needs it), the operator itself
    /// kept verbatim. False for any other operator.
    fn mark_checked(&mut self, out: &mut Vec<u8>, i: usize) -> bool {
        let em = self.emitter;
        let (Some(marks), Some(locals)) = (em.marks, self.locals.marks) else {
            return false;
        };
        let op = &em.ops[i];
        let scalar = scalar_access(op);
        let bulk = match *op {
            Operator::MemoryCopy { .. } => Some(Bulk::Copy),
            Operator::MemoryFill { .. } => Some(Bulk::Fill),
            Operator::MemoryInit { data_index, .. } => Some(Bulk::Init {
                segment: data_index,
                length: em.info.data_lengths[data_index as usize],
            }),
            Operator::DataDrop { data_index } => {
                // Noted, then the operator as without marks.
                self.copy_to(out, em.offsets[i]);
                marks.drop_segment(&mut sink(out), data_index);
                return false;
            }
            _ if scalar.is_some() => None,
            _ => return false,
        };
        self.copy_to(out, em.offsets[i]);
        if self.dirty && !(self.heap_traps_stale && scalar.is_some()) {
            self.flush(out);
        }
        let mut sink = sink(out);
        match (scalar, bulk) {
            (Some(access), _) => marks.scalar(&mut sink, &locals, &access),
            (None, Some(bulk)) => marks.bulk(&mut sink, &locals, bulk),
            (None, None) => unreachable!("an operator with neither check"),
        }
        true
    }

    /// Call operator `i`: the counter goes in as the last argument and comes back as the
    /// last result.
    fn call(&mut self, out: &mut Vec<u8>, i: usize) {
        let em = self.emitter;
        let nfi = em.info.num_func_imports;
        let c = self.locals.counter;
        let op = &em.ops[i];
        self.replace_call(out, i);
        match *op {
            Operator::Call { function_index } if function_index < nfi => {
                // The global is brought up to date too: a trap before the host takes
                // over sees it (a host function that fails writes its own count).
                em.probe_enter(out, function_index, CounterIn::Local(c));
                // System API calls charge: the counter goes in and comes back.
                sink(out)
                    .local_get(c)
                    .call(em.system_api(function_index))
                    .local_set(c);
                em.probe_exit(out, CounterIn::Local(c));
                self.dirty = true;
            }
            Operator::Call { function_index } => {
                self.call_operands(out, op);
                sink(out).call(em.shift.func(function_index)).local_set(c);
                self.dirty = true;
            }
            Operator::CallIndirect {
                type_index,
                table_index,
            } => {
                self.call_operands(out, op);
                sink(out)
                    .call_indirect(table_index, em.call_types + type_index)
                    .local_set(c);
                self.dirty = true;
            }
            Operator::ReturnCall { function_index } if function_index < nfi => {
                // The import returns the results and the counter, as this function does.
                if em.profile {
                    // The call's exit and this function's, with the counter it returned.
                    let returned = self.locals.scratch64;
                    em.probe_enter(out, function_index, CounterIn::Local(c));
                    sink(out)
                        .local_get(c)
                        .call(function_index)
                        .local_set(returned);
                    em.probe_exit(out, CounterIn::Local(returned));
                    em.probe_exit(out, CounterIn::Local(returned));
                    sink(out).local_get(returned).return_();
                } else {
                    sink(out)
                        .local_get(c)
                        .call(em.system_api(function_index))
                        .return_();
                }
            }
            Operator::ReturnCall { function_index } => {
                // The callee takes this function's place: it leaves first.
                em.probe_exit(out, CounterIn::Local(c));
                self.call_operands(out, op);
                sink(out).return_call(em.shift.func(function_index));
            }
            Operator::ReturnCallIndirect {
                type_index,
                table_index,
            } => {
                em.probe_exit(out, CounterIn::Local(c));
                self.call_operands(out, op);
                sink(out).return_call_indirect(table_index, em.call_types + type_index);
            }
            _ => unreachable!("only calls come here"),
        }
    }

    /// What a call to a defined function or an indirect call passes after its arguments'
    /// own code: the arguments widened where the callee takes them so ([`call_params`]), the
    /// counter, and an indirect call's table index (set aside meanwhile).
    fn call_operands(&self, out: &mut Vec<u8>, call: &Operator) {
        let index = match *call {
            Operator::CallIndirect { table_index, .. }
            | Operator::ReturnCallIndirect { table_index, .. } => {
                let index = self.table_index_local(table_index);
                sink(out).local_set(index);
                Some(index)
            }
            _ => None,
        };
        self.emitter.widen_arguments(&self.locals.aside, out, call);
        let mut sink = sink(out);
        sink.local_get(self.locals.counter);
        if let Some(index) = index {
            sink.local_get(index);
        }
    }

    /// The scratch local that holds an indirect call's index into `table`.
    fn table_index_local(&self, table: u32) -> u32 {
        let table64 = self.emitter.info.tables64.get(table as usize).copied();
        if table64.unwrap_or(false) {
            self.locals.scratch64
        } else {
            self.locals.scratch32
        }
    }
}
