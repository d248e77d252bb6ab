//! Counters and time: `time`, `global_timer_set` and `performance_counter`, whose reads
//! the engine keeps (and may encode) when asked (see [`CounterReads`]).

use wasmtime::Result;

use super::registration::{charge, require, violation, Def, C};
use crate::counter_reads::{CounterRead, CounterReads};

/// Defines `d` if it is one of the counters' and time's functions; says whether it was.
pub(super) fn define(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "time" => d.value(|s| s.time_ns as i64)?,
        // The canister's one-off timer: the deadline in ns since the epoch, 0 for none
        // (`CanisterTimer::from_time` makes 0 `Inactive`). Returns the deadline it replaces,
        // 0 when none was set; the round that reaches it runs `canister_global_timer`.
        "global_timer_set" => d.define(move |c: &mut C<'_>, ts: i64| -> Result<i64> {
            charge(c, f.base)?;
            require(c, "global_timer_set", c.data().msg.api.can_set_timer())?;
            let old = std::mem::replace(&mut c.data_mut().global_timer, ts as u64);
            Ok(old as i64)
        })?,
        "performance_counter" => d.define(move |c: &mut C<'_>, kind: i32| -> Result<i64> {
            charge(c, f.base)?;
            match kind {
                // Type 1 adds the call context's earlier instructions: none outside callbacks.
                0 | 1 => Ok(counter_read(c) as i64),
                _ => Err(violation(format!(
                    "ic0.performance_counter: unknown counter type {kind}"
                ))),
            }
        })?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Instructions used so far in this message (performance counter type 0).
fn instructions_used(caller: &mut C<'_>) -> u64 {
    let limit = caller.data().msg.limit;
    (limit as i64).saturating_sub(caller.data().left).max(0) as u64
}

/// What a `performance_counter` read returns: the instructions so far, or with
/// [`CounterReads::Encode`] the read's index and pages packed (the read kept either way
/// unless [`CounterReads::Off`]).
fn counter_read(caller: &mut C<'_>) -> u64 {
    let instructions = instructions_used(caller);
    let state = caller.data_mut();
    if state.counter_reads == CounterReads::Off {
        return instructions;
    }
    let read = CounterRead {
        instructions,
        pages: state.page_counts_so_far(),
    };
    let index = state.reads.len() as u64;
    state.reads.push(read);
    match &state.counter_reads {
        CounterReads::Encode(e) => e.value(index, &read.pages),
        _ => instructions,
    }
}
