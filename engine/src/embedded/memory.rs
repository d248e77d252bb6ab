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

/// An anonymous mapping this value owns ([`map_anonymous`]): unmapped when it is dropped.
pub struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the value owns the address range only; what is stored there, and who touches it
// when, is its owner's to rule (through the raw pointer, in unsafe code).
unsafe impl Send for Mapping {}
// SAFETY: as for Send: `&Mapping` gives the address and the length, nothing else.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub fn anonymous(len: usize, prot: libc::c_int, flags: libc::c_int) -> std::io::Result<Self> {
        let base = map_anonymous(len, prot, flags)?;
        Ok(Mapping { base, len })
    }

    /// Owns the mapping of `len` bytes at `base` (made otherwise: a file's, say).
    ///
    /// # Safety
    /// `base..base + len` is a mapping that nothing else unmaps.
    pub unsafe fn adopt(base: *mut u8, len: usize) -> Self {
        Mapping { base, len }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.base
    }

    /// Its length in bytes.
    pub fn size(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping `anonymous` made or `adopt` was given, which this value alone
        // owns and unmaps once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
