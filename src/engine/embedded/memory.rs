//! The memory tracker: the canister's heap and stable memory, what a message accessed and
//! wrote in them, and what that costs under each replica vintage. One part, used by the
//! execution loop (mod.rs), the System API and the profiler; it uses none of them.
//!
//! - [`heap`]: the heap (Wasm linear memory) as a mapping the engine owns; its access and
//!   write faults count the Wasm pages touched and keep the old bytes for a rollback.
//! - [`write_log`]: the kernel's log of written pages, where there is one (one write fault
//!   per Wasm page instead of up to sixteen).
//! - [`stable`]: stable memory, its pages, and the pages a message accessed and wrote.
//! - [`image`]: the heap's snapshots (frozen images and the sets of pages they hold).
//! - [`charges`]: the page counts and the tracker's charges, taken from the instruction
//!   counter as the replica's fault handler takes them; what the profiler is told.

pub mod charges;
pub mod heap;
pub(super) mod image;
pub mod stable;
pub mod write_log;

/// The OS page the replica tracks (`ic_sys::PAGE_SIZE`).
pub const OS_PAGE: usize = 4096;

/// A fresh anonymous mapping of `len` zeroed bytes, `flags` beside `MAP_ANONYMOUS`
/// (`MAP_PRIVATE`, or `MAP_SHARED` for memory that worker processes share across `fork`;
/// `MAP_NORESERVE` for a reservation). The caller owns it and unmaps it.
pub fn map_anonymous(
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
) -> std::io::Result<*mut u8> {
    // SAFETY: a new mapping at an address the kernel picks: nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            flags | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(base.cast())
}
