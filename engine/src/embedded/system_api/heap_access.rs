//! The canister's heap as System API functions read and write it: ranges checked against
//! its size, through the engine's own mapping when there is one; and the `*_copy` functions,
//! which copy a host-side byte string out to it.

use wasmtime::Result;

use super::registration::{charge, violation, Addr, Def, C};
use super::HostState;

pub(super) fn heap_range(
    heap_len: usize,
    api: &str,
    ptr: u64,
    len: u64,
) -> Result<std::ops::Range<usize>> {
    match ptr.checked_add(len) {
        Some(end) if end <= heap_len as u64 => Ok(ptr as usize..end as usize),
        _ => Err(violation(format!(
            "{api}: heap range [{ptr}, {ptr} + {len}) is out of bounds of the {heap_len}-byte heap"
        ))),
    }
}

/// The heap and the host state at once. The engine's own heap mapping is used directly (two
/// atomic loads); wasmtime's `Memory` lookup walks the store's instance tables, a few cache
/// misses on every stable memory call.
pub(super) fn heap_and_state<'a>(
    caller: &'a mut C<'_>,
    api: &str,
) -> Result<(&'a mut [u8], &'a mut HostState)> {
    if let Some(region) = &caller.data().heap {
        let (base, len) = (region.base(), region.len());
        // SAFETY: the mapping is this instance's heap, live while the instance is; no Wasm
        // runs during a host call, and the slice cannot outlive the borrow of `caller`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(base, len) };
        return Ok((bytes, caller.data_mut()));
    }
    let memory = caller
        .data()
        .memory
        .ok_or_else(|| violation(format!("{api}: the module has no memory")))?;
    Ok(memory.data_and_store_mut(caller))
}

/// The host is about to read (`write`: write) `r` of the heap: where the module's code finds
/// its first touches (heap marks), the host's touches are counted here, as the kernel's
/// faults would count them.
pub(super) fn host_touch(state: &HostState, r: &std::ops::Range<usize>, write: bool) {
    if let Some(heap) = &state.heap {
        heap.touch(r.start as u64..r.end as u64, write);
    }
}

pub(super) fn read_heap(caller: &mut C<'_>, api: &str, ptr: u64, len: u64) -> Result<Vec<u8>> {
    let (data, state) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, ptr, len)?;
    host_touch(state, &r, false);
    Ok(data[r].to_vec())
}

pub(super) fn write_heap(caller: &mut C<'_>, api: &str, ptr: u64, bytes: &[u8]) -> Result<()> {
    let (data, state) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, ptr, bytes.len() as u64)?;
    host_touch(state, &r, true);
    data[r].copy_from_slice(bytes);
    Ok(())
}

/// `*_copy(dst, offset, size)` from a host-side byte string.
pub(super) fn copy_out(
    caller: &mut C<'_>,
    api: &str,
    src: &[u8],
    dst: u64,
    offset: u64,
    size: u64,
) -> Result<()> {
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= src.len() as u64)
        .ok_or_else(|| {
            violation(format!(
                "{api}: range [{offset}, {offset} + {size}) is out of bounds of the {}-byte source",
                src.len()
            ))
        })?;
    let chunk = src[offset as usize..end as usize].to_vec();
    write_heap(caller, api, dst, &chunk)
}

/// Defines `d` as a `*_copy(dst, offset, size)` function: it charges its fee for `size`
/// bytes and copies them out of the byte string `src` reads off the host state.
pub(super) fn define_copy<A: Addr>(d: &mut Def<'_>, src: fn(&HostState) -> &[u8]) -> Result<()> {
    let (fee, api) = (d.fee, d.name.to_string());
    d.define(
        move |c: &mut C<'_>, dst: A, off: A, size: A| -> Result<()> {
            charge(c, fee.charge(size.get()))?;
            let bytes = src(c.data()).to_vec();
            copy_out(c, &api, &bytes, dst.get(), off.get(), size.get())
        },
    )
}
