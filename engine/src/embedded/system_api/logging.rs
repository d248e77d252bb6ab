//! The canister's log: `debug_print`, and `trap`, whose message ends the call; both charge
//! for the bytes they add to the canister log's buffer.

use wasmtime::{Error, Result};

use super::heap_access::read_heap;
use super::registration::{charge, Addr, Def, C};
use super::HostTrap;
use crate::cost;

/// Defines `d` if it is one of the log's functions; says whether it was.
pub(super) fn define<A: Addr>(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "debug_print" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            let len = size.get();
            let remaining = cost::LOG_BUFFER_CAPACITY.saturating_sub(c.data().msg.logged_bytes);
            let print_bytes = if c.data().limits.charge_debug_print_bytes {
                len
            } else {
                0
            };
            charge(
                c,
                f.base + cost::logging_charge(len, remaining) + print_bytes,
            )?;
            let bytes = read_heap(c, "debug_print", src.get(), len)?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let state = c.data_mut();
            state.msg.logged_bytes += len;
            if state.print_log {
                eprintln!("[canister] {text}");
            }
            state.log.push(text);
            Ok(())
        })?,
        "trap" => d.define(move |c: &mut C<'_>, src: A, size: A| -> Result<()> {
            let len = size.get();
            let remaining = cost::LOG_BUFFER_CAPACITY.saturating_sub(c.data().msg.logged_bytes);
            charge(c, f.charge(len) + cost::logging_charge(len, remaining))?;
            let bytes = read_heap(c, "trap", src.get(), len)?;
            Err(Error::new(HostTrap::CalledTrap(
                String::from_utf8_lossy(&bytes).into_owned(),
            )))
        })?,
        _ => return Ok(false),
    }
    Ok(true)
}
