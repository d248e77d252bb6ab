//! Stable memory's `ic0` functions: size, grow, read and write, in the 32-bit API (which
//! cannot address past 4 GiB) and the 64-bit one; the native stable accesses' cache is kept
//! equal to stable memory around each host access.

use std::ops::Range;

use wasmtime::{Error, Result};

use super::heap_access::{heap_and_state, heap_range, host_touch};
use super::native_stable::sync_native_size;
use super::registration::{charge, violation, Addr, Def, C};
use super::{HostState, HostTrap};
use crate::cost::{self, ApiFee, Limits};
use crate::embedded::memory::stable::StableError;

/// Defines `d` if it is one of stable memory's functions; says whether it was.
pub(super) fn define(d: &mut Def<'_>) -> Result<bool> {
    let f = d.fee;
    match d.name {
        "stable_size" => d.define(move |c: &mut C<'_>| -> Result<i32> {
            charge(c, f.base)?;
            check_32bit_stable(c, "stable_size")?;
            Ok(c.data().stable.size_wasm_pages() as i32)
        })?,
        "stable64_size" => d.value(|s| s.stable.size_wasm_pages() as i64)?,
        "stable_grow" => d.define(move |c: &mut C<'_>, delta: i32| -> Result<i32> {
            charge(c, f.base)?;
            let stable = &mut c.data_mut().stable;
            // The 32-bit API cannot address past 4 GiB.
            if stable.size_wasm_pages() + delta as u32 as u64 > MAX_32BIT_STABLE_PAGES {
                return Ok(-1);
            }
            let old = stable.grow(delta as u32 as u64) as i32;
            sync_native_size(&mut *c)?;
            Ok(old)
        })?,
        "stable64_grow" => d.define(move |c: &mut C<'_>, delta: i64| -> Result<i64> {
            charge(c, f.base)?;
            let old = c.data_mut().stable.grow(delta as u64);
            sync_native_size(&mut *c)?;
            Ok(old)
        })?,
        "stable_read" => define_access::<i32, _>(d, read, true)?,
        "stable64_read" => define_access::<i64, _>(d, read, false)?,
        "stable_write" => define_access::<i32, _>(d, write, true)?,
        "stable64_write" => define_access::<i64, _>(d, write, false)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// `stable_read(dst, offset, size)` or `stable_write(offset, src, size)` with `A` = `i32`,
/// or their `stable64_` forms with `A` = `i64`, `access` being [`read`] or [`write`] (whose
/// arguments are in the same order). The 32-bit API (`check_32bit`) first checks that
/// stable memory fits its addresses.
fn define_access<A: Addr, F>(d: &mut Def<'_>, access: F, check_32bit: bool) -> Result<()>
where
    F: Fn(&mut C<'_>, &str, ApiFee, u64, u64, u64) -> Result<()> + Copy + Send + Sync + 'static,
{
    let (fee, api) = (d.fee, d.name.to_string());
    d.define(move |c: &mut C<'_>, a: A, b: A, size: A| -> Result<()> {
        if check_32bit {
            check_32bit_stable(c, &api)?;
        }
        access(c, &api, fee, a.get(), b.get(), size.get())
    })
}

/// The replica's wording (its `internal_trap` handler) names the limits of every message
/// kind, whichever kind ran; `HostTrap::MemoryAccessLimit` adds the common prefix.
fn stable_err(e: StableError, api: &str, limits: &Limits) -> Error {
    const KB_PER_PAGE: u64 = cost::OS_PAGE_SIZE / 1024;
    match e {
        StableError::OutOfBounds => Error::new(HostTrap::ContractViolation(format!("{api}: stable memory out of bounds"))),
        StableError::DirtyPageLimit(_) => Error::new(HostTrap::MemoryAccessLimit(format!(
            "Exceeded the limit for the number of modified pages in the stable memory in a single execution: limit {} KB for regular messages, {} KB for upgrade messages and {} KB for queries",
            limits.stable_dirty_pages_update * KB_PER_PAGE,
            limits.stable_dirty_pages_install * KB_PER_PAGE,
            limits.stable_dirty_pages_query * KB_PER_PAGE,
        ))),
        StableError::AccessedPageLimit(_) => Error::new(HostTrap::MemoryAccessLimit(format!(
            "Exceeded the limit for the number of accessed pages in the stable memory in a single message execution: limit {} KB for regular messages and {} KB for queries",
            limits.stable_accessed_pages_update * KB_PER_PAGE,
            limits.stable_accessed_pages_query * KB_PER_PAGE,
        ))),
    }
}

/// What a stable memory access does first: charges `fee` for `size` bytes, checks the heap
/// range at `heap_at`, and copies back into stable memory the pages of its range at `offset`
/// that the native stable accesses wrote in their cache. Gives the heap, the host state and
/// the heap range.
#[inline]
fn begin_access<'a>(
    caller: &'a mut C<'_>,
    api: &str,
    fee: ApiFee,
    heap_at: u64,
    offset: u64,
    size: u64,
) -> Result<(&'a mut [u8], &'a mut HostState, Range<usize>)> {
    charge(caller, fee.charge(size))?;
    let (data, state) = heap_and_state(caller, api)?;
    let r = heap_range(data.len(), api, heap_at, size)?;
    if let Some(native) = &state.native_stable {
        native.write_back_range(&mut state.stable, offset, size);
    }
    Ok((data, state, r))
}

/// `stable_read` and `stable64_read`: charges `fee` for `size` bytes and copies them from
/// stable memory at `offset` to the heap at `dst`.
fn read(
    caller: &mut C<'_>,
    api: &str,
    fee: ApiFee,
    dst: u64,
    offset: u64,
    size: u64,
) -> Result<()> {
    let (data, state, r) = begin_access(caller, api, fee, dst, offset, size)?;
    let heap = state.heap.as_deref();
    let touched = r.start as u64..r.end as u64;
    state
        .stable
        .read_after(offset, &mut data[r], || {
            if let Some(heap) = heap {
                heap.touch(touched, true)
            }
        })
        .map_err(|e| stable_err(e, api, &state.limits))?;
    if let Some(native) = &mut state.native_stable {
        native.note(&state.stable, offset, size, None);
    }
    Ok(())
}

/// `stable_write` and `stable64_write`: charges `fee` for `size` bytes and copies them from
/// the heap at `src` to stable memory at `offset`; before the memory tracker, charges the
/// pages it wrote first as well.
fn write(
    caller: &mut C<'_>,
    api: &str,
    fee: ApiFee,
    offset: u64,
    src: u64,
    size: u64,
) -> Result<()> {
    let (data, state, r) = begin_access(caller, api, fee, src, offset, size)?;
    let newly_dirty = state
        .stable
        .write(offset, &data[r.clone()])
        .map_err(|e| stable_err(e, api, &state.limits))?;
    // A read of the heap needs no old bytes: counted after the copy that made it.
    host_touch(state, &r, false);
    if let Some(native) = &mut state.native_stable {
        native.note(&state.stable, offset, size, Some(&data[r]));
    }
    if caller.data().tracker.charges_pages() {
        // The memory tracker charges the pages instead (at the end of this call).
        return Ok(());
    }
    let overhead = caller.data().limits.dirty_page_overhead;
    charge(caller, newly_dirty * overhead)
}

const MAX_32BIT_STABLE_PAGES: u64 = 65536;

fn check_32bit_stable(caller: &C<'_>, api: &str) -> Result<()> {
    if caller.data().stable.size_wasm_pages() > MAX_32BIT_STABLE_PAGES {
        return Err(violation(format!(
            "{api}: stable memory is larger than 4 GiB; use the 64-bit API"
        )));
    }
    Ok(())
}
