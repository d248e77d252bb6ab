//! The local counter's calling convention: what defined functions take with
//! [`Counter::Local`] (the counter as an extra last parameter, and `i32` parameters that go
//! on the machine stack as `i64`).

use wasm_encoder::ValType;

#[cfg(doc)]
use super::Counter;

/// Integer parameters that Cranelift's x86-64 calling conventions pass in registers after
/// the callee's and the caller's vmctx (six argument registers less those two).
const REGISTER_INT_PARAMS: usize = 4;

/// [`Counter::Local`]: the parameters of a defined function, `params` with the counter added
/// and every `i32` that goes on the machine stack widened to `i64`. Cranelift's x86-64
/// backend stores an `i32` stack argument with a 32-bit store and the callee loads its slot
/// with a 64-bit load, which store-to-load forwarding cannot serve: the callee waits until
/// the store reaches the cache. A call with two such arguments took 3.4 times as long as with
/// `i64` ones (wasmtime 48, this project's 2-core AMD EPYC machine), and the loads took 17% of
/// the compiled code's time in the default run's prefill. The conversions are injected code:
/// they charge nothing and cannot trap, so no count changes.
pub(super) fn call_params(params: &[ValType]) -> Vec<ValType> {
    let mut ints = 0;
    params
        .iter()
        .chain([&ValType::I64])
        .map(|&ty| match ty {
            ValType::I32 | ValType::I64 => {
                ints += 1;
                if ints > REGISTER_INT_PARAMS {
                    ValType::I64
                } else {
                    ty
                }
            }
            other => other,
        })
        .collect()
}

/// The positions of `params` that [`call_params`] widens.
pub(super) fn widened(params: &[ValType]) -> impl Iterator<Item = bool> + '_ {
    params
        .iter()
        .zip(call_params(params))
        .map(|(&from, to)| from != to)
}
