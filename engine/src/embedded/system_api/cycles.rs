//! Cycles: the canister's balance, and the message's cycles, of which there are none (the
//! engine's calls carry no cycles, so nothing is available, refunded or accepted).

use wasmtime::Result;

use super::heap_access::write_heap;
use super::registration::{charge, Addr, Def, C};
use super::HostState;

/// Defines `d` if it is one of the cycles' functions; says whether it was.
pub(super) fn define<A: Addr>(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "msg_cycles_available128" | "msg_cycles_refunded128" => amount128::<A>(d, |_| 0)?,
        "msg_cycles_accept128" => d.define(
            move |c: &mut C<'_>, _hi: i64, _lo: i64, dst: A| -> Result<()> {
                charge(c, f.base)?;
                write_heap(c, "msg_cycles_accept128", dst.get(), &u128_bytes(0))
            },
        )?,
        "canister_cycle_balance" => d.value(|s| s.cycles_balance.min(i64::MAX as u128) as i64)?,
        "canister_cycle_balance128" | "canister_liquid_cycle_balance128" => {
            amount128::<A>(d, |s| s.cycles_balance)?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A function that charges its base fee and writes the 128-bit amount `get` reads off the
/// host state to the heap at its argument.
fn amount128<A: Addr>(d: &mut Def<'_>, get: fn(&HostState) -> u128) -> Result<()> {
    let (base, api) = (d.fee.base, d.name.to_string());
    d.define(move |c: &mut C<'_>, dst: A| -> Result<()> {
        charge(c, base)?;
        let amount = get(c.data());
        write_heap(c, &api, dst.get(), &u128_bytes(amount))
    })
}

fn u128_bytes(v: u128) -> [u8; 16] {
    v.to_le_bytes()
}
