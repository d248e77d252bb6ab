//! Profiling's probes: calls to [`PROFILE_ENTER_IMPORT`] and [`PROFILE_EXIT_IMPORT`] with the
//! counter, which both counters' passes put where a function starts and returns and around
//! System API calls. Unmetered: they only read the counter.

use wasm_encoder::BlockType;

use super::emitter::{sink, Emitter};
#[cfg(doc)]
use super::{PROFILE_ENTER_IMPORT, PROFILE_EXIT_IMPORT};

/// Where a profiling probe reads the counter from.
#[derive(Clone, Copy)]
pub(super) enum CounterIn {
    Local(u32),
    Global(u32),
}

impl CounterIn {
    fn push<'s, 'o>(
        self,
        s: &'s mut wasm_encoder::InstructionSink<'o>,
    ) -> &'s mut wasm_encoder::InstructionSink<'o> {
        match self {
            CounterIn::Local(l) => s.local_get(l),
            CounterIn::Global(g) => s.global_get(g),
        }
    }
}

impl Emitter<'_, '_> {
    /// Opens the block the body runs in (of the function's result type, so that a branch
    /// out of the body passes the exit probe too) and probes the function's entry.
    pub(super) fn enter_body(&self, out: &mut Vec<u8>, counter: CounterIn) {
        let func = self.info.num_func_imports + self.body_index as u32;
        let block_type = match self.func_type(func).results.as_slice() {
            [] => BlockType::Empty,
            [one] => BlockType::Result(*one),
            _ => BlockType::FunctionType(self.result_types + self.info.func_types[self.body_index]),
        };
        sink(out).block(block_type);
        self.probe_enter(out, func, counter);
    }

    /// With profiling: `profile_enter(func, counter)`.
    pub(super) fn probe_enter(&self, out: &mut Vec<u8>, func: u32, counter: CounterIn) {
        if self.profile {
            let mut s = sink(out);
            s.i32_const(func as i32);
            counter.push(&mut s).call(self.enter_func);
        }
    }

    /// With profiling: `profile_exit(counter)`.
    pub(super) fn probe_exit(&self, out: &mut Vec<u8>, counter: CounterIn) {
        if self.profile {
            let mut s = sink(out);
            counter.push(&mut s).call(self.exit_func);
        }
    }
}
