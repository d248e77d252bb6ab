//! The canister heap (Wasm linear memory) with the replica's dirty-page tracking.
//!
//! The replica charges `DIRTY_PAGE_OVERHEAD` per 4 KiB heap page *written* during a
//! message, found by write-protecting the heap and catching the first write fault on each
//! page. We do the same: wasmtime gets its linear memories from [`HeapCreator`], each one
//! an mmap we own; at message start the accessible part is made read-only, and the store's
//! signal handler ([`HeapRegion::handle_fault`]) marks the faulting page dirty and makes it
//! writable. Pages written with unchanged content still count, as on the replica.
//!
//! The same fault keeps the page's old bytes (the message's undo log), so a failed message
//! rolls back without a second copy of the whole heap: a 10,000,000-row heap map's is
//! 1.5 GB.
//!
//! Under the deterministic memory tracker (replica vintage `2026-07`, `arm(true)`) the heap
//! starts each message inaccessible instead, as the replica's does: the first access to a
//! 64 KiB Wasm page faults, is counted and makes the Wasm page readable; writes then fault
//! per 4 KiB page as before, and the first one in a Wasm page counts it as written. The
//! host turns the counts into the tracker's charge ([`HeapRegion::wasm_pages_accessed`]).
//! A first write to an untouched page counts its access, then its write: in one fault
//! where the fault says it is a write (x86-64 Linux, [`fault_was_write`]), else in two.
//! The same counts either way.
//!
//! Where the kernel keeps a log of written pages ([`super::write_log`]), a write faults
//! only once per Wasm page: the fault counts the Wasm page as written, keeps the old bytes
//! of all its 4 KiB pages and makes all of them writable, and the log names the 4 KiB pages
//! written when the message ends. The same pages, the same counts, at the same moments;
//! one write fault per Wasm page instead of up to sixteen.
//!
//! A module with heap marks (`instrument::HEAP_MARKS_EXPORT`) needs none of that: its code
//! checks a byte per 4 KiB page before each access and calls [`HeapRegion::touch`] at a
//! first touch, which counts, keeps the old bytes and marks as the fault handler would; the
//! heap stays readable and writable, and the host's own accesses call `touch` too.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use wasmtime::{bail, Result};
use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

use super::write_log::{HeapWrites, WriteLog};
use super::Mapping;
pub use super::OS_PAGE;
use crate::instrument;
use touched::{PageOrder, Touched};
/// The Wasm page, which the deterministic memory tracker maps and counts as one.
pub const WASM_PAGE: usize = 65536;
const OS_PAGES_PER_WASM_PAGE: usize = WASM_PAGE / OS_PAGE;
/// Wasm32 heap maximum: 4 GiB (`MAX_WASM_MEMORY_IN_BYTES`).
pub const MAX_HEAP_BYTES: usize = 4 << 30;
/// Wasm64 heap maximum: 6 GiB (`MAX_WASM64_MEMORY_IN_BYTES`, as the IC's documentation
/// and the replica's memory constants state it; shared/research/ic-metering.md notes that
/// a newer replica test implies 18 GiB).
pub const MAX_WASM64_HEAP_BYTES: usize = 6 << 30;

/// Shared between the memory (which wasmtime owns) and the canister (which arms tracking
/// and reads the dirty pages). All fields are atomics: the fault handler reads them.
pub struct HeapRegion {
    base: AtomicUsize,
    len: AtomicUsize,
    armed: AtomicBool,
    /// One byte per OS page of the whole reservation: 1 = written in this message.
    dirty: Box<[AtomicU8]>,
    /// What `FrozenHeap::map_into` returned when it last filled the heap (0: a copy).
    view_of: AtomicU64,
    /// One byte per OS page: 1 = the page still holds the bytes of the frozen heap this
    /// heap is a view of. A message that writes it keeps no undo copy: dropping the
    /// page's private copy brings the old bytes back (a pre_upgrade that rewrites a
    /// restored 1.2 GB SQLite page cache would otherwise copy all of it aside).
    clean: Box<[AtomicU8]>,
    /// The heap's length when the message started: pages below it have old bytes to keep.
    armed_len: AtomicUsize,
    /// A reservation as large as the heap's: the old bytes of a page the message wrote
    /// first lie at the page's own offset in it.
    undo: usize,
    /// One byte per OS page: 1 = its undo page holds memory (filled since the undo pages
    /// were last given back).
    undo_resident: Box<[AtomicU8]>,
    /// How many undo pages hold memory (see [`UNDO_KEPT_PAGES`]).
    undo_used: AtomicUsize,
    /// The message counts accessed and written Wasm pages (the deterministic memory
    /// tracker): the heap starts it inaccessible.
    track_access: AtomicBool,
    /// The Wasm pages accessed in this message, in order (tracker only).
    accessed: Touched,
    /// The Wasm pages written in this message, in order (counted by the tracker only).
    /// With the kernel's log, the flags are the Wasm pages made writable in this message
    /// under every replica vintage.
    written: Touched,
    /// How written pages are found.
    writes: HeapWrites,
    /// The kernel log's generation the mapping was set up under; 0 when the mapping
    /// changed (created, or a file mapped over it): the log must be set up on it again
    /// before the next message, as after the process forked.
    log_set_up_at: AtomicU64,
    /// One byte per Wasm page: 1 = registered with the kernel's log (under the generation
    /// of `log_set_up_at`). A Wasm page is registered at its first write, not before: a
    /// read fault in a registered range maps one 4 KiB page, elsewhere the kernel maps the
    /// neighbouring ones too (a warm SQLite insert reading 1,800 Wasm pages took 28,000
    /// faults with the whole heap registered, 2,200 without).
    registered: Box<[AtomicU8]>,
    /// Wasm pages registered one by one since the whole heap last was: past
    /// [`MAX_REGISTERED_ONE_BY_ONE`] the next message's start registers it all.
    registered_count: AtomicUsize,
    /// Reservation bytes the heap can grow into (kept out of huge pages for the log).
    capacity: usize,
    /// Undo pages filled in this message.
    undo_copied: AtomicUsize,
    /// This message counts every 4 KiB page of a Wasm page it writes as written, without
    /// the kernel's log (which costs a fault per 4 KiB page written): its caller needs no
    /// exact count ([`HeapRegion::arm`]).
    whole_wasm_pages: AtomicBool,
    /// This message keeps the old bytes of the pages it writes, to roll back if it fails
    /// ([`Arming::undo`]).
    undo_kept: AtomicBool,
    /// The instance's heap marks (`instrument::HEAP_MARKS_EXPORT`), 0 without: then the
    /// module's code finds its first touches and calls [`HeapRegion::touch`], and the heap
    /// stays readable and writable; without, the kernel's faults find them.
    marks: AtomicUsize,
    /// With marks: the Wasm pages marked in this message, in order (their marks are
    /// cleared when it ends).
    marked: PageOrder,
    /// The last message's protection is still on: its end left the pages it did not open
    /// inaccessible (or read-only) instead of opening the whole heap, since the next
    /// message's start closes it all again; [`HeapRegion::bytes_mut`] opens it first.
    closed: AtomicBool,
}

/// Undo pages stay allocated between messages: a message that writes the pages the last
/// one wrote reuses them, where pages given back would each cost a fault and a page of
/// zeros before the copy (a Motoko store's collector rewrites much of a 1.4 GiB heap in
/// every message of its fill). Past this many (64 MiB), they are all given back after a
/// message that filled fewer than half of them: the rest are another message's.
const UNDO_KEPT_PAGES: usize = 16_384;

/// At most how many Wasm pages of a heap are registered with the kernel's log one by one
/// (each at its first write) before the whole heap is: 2,048 scattered ranges keep the
/// heap's mappings a few thousand, far below the kernel's limit (`vm.max_map_count`,
/// 65,530 by default).
const MAX_REGISTERED_ONE_BY_ONE: usize = 2_048;

/// What a message's start sets up ([`HeapRegion::arm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arming {
    /// The heap starts inaccessible: each Wasm page's first access faults and is counted.
    pub track_access: bool,
    /// [`HeapRegion::disarm`] names every 4 KiB page of each Wasm page written, where the
    /// kernel's log would name the 4 KiB pages: the same Wasm page counts and the same
    /// state, for a caller that reads no count of 4 KiB pages.
    pub whole_wasm_pages: bool,
    /// The old bytes of each page the message writes are kept, so that it can roll back.
    /// Without, a failed message leaves the heap as it stopped: for a message whose caller
    /// gives the canister up if it fails (a store's fill), it saves a copy of every page
    /// written and the memory that holds it.
    pub undo: bool,
}

impl Arming {
    /// A measured message's: accesses tracked, the 4 KiB pages written exact, old bytes kept.
    pub const EXACT: Arming = Arming {
        track_access: true,
        whole_wasm_pages: false,
        undo: true,
    };
}

impl HeapRegion {
    fn new(base: usize, len: usize, capacity: usize, undo: usize, writes: HeapWrites) -> Self {
        let flags = |n: usize| (0..n).map(|_| AtomicU8::new(0)).collect::<Box<[_]>>();
        let os_pages = capacity / OS_PAGE;
        let wasm_pages = capacity.div_ceil(WASM_PAGE);
        let dirty = flags(os_pages);
        Self {
            base: AtomicUsize::new(base),
            len: AtomicUsize::new(len),
            armed: AtomicBool::new(false),
            dirty,
            view_of: AtomicU64::new(0),
            clean: flags(os_pages),
            armed_len: AtomicUsize::new(0),
            undo,
            undo_resident: flags(os_pages),
            undo_used: AtomicUsize::new(0),
            track_access: AtomicBool::new(false),
            accessed: Touched::new(wasm_pages),
            written: Touched::new(wasm_pages),
            writes,
            log_set_up_at: AtomicU64::new(0),
            registered: flags(wasm_pages),
            registered_count: AtomicUsize::new(0),
            capacity,
            undo_copied: AtomicUsize::new(0),
            whole_wasm_pages: AtomicBool::new(false),
            undo_kept: AtomicBool::new(true),
            marks: AtomicUsize::new(0),
            marked: PageOrder::new(wasm_pages),
            closed: AtomicBool::new(false),
        }
    }

    /// The instance's code finds its first touches in `marks` (the marks memory's bytes,
    /// all zero; they live as long as the instance, and so as this heap): from now on the
    /// heap is never protected.
    pub fn use_marks(&self, marks: *mut u8) -> Result<()> {
        debug_assert!(!self.armed.load(Ordering::Acquire));
        self.marks.store(marks as usize, Ordering::Release);
        protect(self.base(), self.len(), libc::PROT_READ | libc::PROT_WRITE)
    }

    fn marks(&self) -> Option<*mut u8> {
        let marks = self.marks.load(Ordering::Acquire);
        (marks != 0).then_some(marks as *mut u8)
    }

    pub fn base(&self) -> *mut u8 {
        self.base.load(Ordering::Acquire) as *mut u8
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frozen heap this heap is a copy-on-write view of (see `FrozenHeap::map_into`).
    pub fn view_of(&self) -> u64 {
        self.view_of.load(Ordering::Acquire)
    }

    /// The heap now maps the frozen heap `view` (0: it holds a copy): every page but `own`
    /// (a layer's, copied in) holds that file's bytes.
    pub fn set_view_of(&self, view: u64, own: impl Iterator<Item = u32>) {
        self.view_of.store(view, Ordering::Release);
        // A view is a file mapped over the heap: a mapping the kernel's log does not know.
        self.log_set_up_at.store(0, Ordering::Release);
        let pages = self.len() / OS_PAGE;
        for (page, flag) in self.clean.iter().enumerate() {
            flag.store((view != 0 && page < pages) as u8, Ordering::Relaxed);
        }
        for page in own {
            self.clean[page as usize].store(0, Ordering::Relaxed);
        }
    }

    /// `pages` hold the view's file bytes again (their private copies were dropped).
    pub fn mark_clean(&self, pages: impl Iterator<Item = u32>) {
        for page in pages {
            self.clean[page as usize].store(1, Ordering::Relaxed);
        }
    }

    /// The heap bytes, readable and writable (opened if the last message left them
    /// closed). Callers must not hold the slice across Wasm execution.
    ///
    /// # Safety
    /// No Wasm code of this memory's store may run while the slice is alive.
    #[allow(clippy::mut_from_ref)] // the bytes are the mmap's, not `self`'s
    pub unsafe fn bytes_mut(&self) -> Result<&mut [u8]> {
        if self.closed.swap(false, Ordering::AcqRel) {
            protect(self.base(), self.len(), libc::PROT_READ | libc::PROT_WRITE)?;
        }
        // SAFETY: as for `bytes_as_they_are`.
        Ok(unsafe { self.bytes_as_they_are() })
    }

    /// The heap bytes without opening them: only for what needs no access to them
    /// (`madvise`, mapping over them).
    ///
    /// # Safety
    /// As for [`HeapRegion::bytes_mut`]; nothing may read or write the bytes unless the heap
    /// is open.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn bytes_as_they_are(&self) -> &mut [u8] {
        // SAFETY: `len` bytes from `base` are the mapping's, and the caller keeps Wasm code,
        // the only other writer, from running while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.base(), self.len()) }
    }

    /// Starts a message: every accessible page becomes read-only until first written, or,
    /// with [`Arming::track_access`], inaccessible until first accessed.
    pub fn arm(&self, arming: Arming) -> Result<()> {
        let Arming {
            track_access,
            whole_wasm_pages,
            undo,
        } = arming;
        debug_assert!(!self.armed.load(Ordering::Acquire));
        self.armed_len.store(self.len(), Ordering::Release);
        self.track_access.store(track_access, Ordering::Release);
        self.whole_wasm_pages
            .store(whole_wasm_pages, Ordering::Release);
        self.undo_kept.store(undo, Ordering::Release);
        self.accessed.order.clear();
        self.written.order.clear();
        if self.marks().is_some() {
            self.armed.store(true, Ordering::Release);
            return Ok(());
        }
        if let HeapWrites::Logged(log) = self.writes {
            let generation = log.generation();
            let base = self.base.load(Ordering::Acquire);
            let whole = base..base + self.capacity;
            let set_up = |e| wasmtime::format_err!("setting up the heap's write log: {e}");
            if self.log_set_up_at.swap(generation, Ordering::AcqRel) != generation {
                log.keep_out_of_huge_pages(whole).map_err(set_up)?;
                self.mark_registered(false);
            } else if self.registered_count.load(Ordering::Acquire) > MAX_REGISTERED_ONE_BY_ONE {
                // Registered ranges do not merge with the others: so many scattered ones
                // would split the mapping towards the kernel's limit on mappings.
                log.register(whole).map_err(set_up)?;
                self.mark_registered(true);
            }
        }
        self.armed.store(true, Ordering::Release);
        self.closed.store(false, Ordering::Release);
        protect(self.base(), self.len(), self.armed_protection())
    }

    fn armed_protection(&self) -> libc::c_int {
        if self.track_access.load(Ordering::Acquire) {
            libc::PROT_NONE
        } else {
            libc::PROT_READ
        }
    }

    /// Wasm pages accessed so far in this message (0 without access tracking).
    pub fn wasm_pages_accessed(&self) -> u64 {
        self.accessed.count()
    }

    /// Wasm pages written so far in this message (0 without access tracking).
    pub fn wasm_pages_written(&self) -> u64 {
        self.written.count()
    }

    /// The Wasm pages accessed and written so far in this message, each in the order of
    /// its first access (first write).
    pub fn wasm_pages_in_order(&self) -> (Vec<u64>, Vec<u64>) {
        (self.accessed.order.to_vec(), self.written.order.to_vec())
    }

    /// Wasm pages accessed plus Wasm pages written so far in this message: counts only
    /// grow within a message, so an unchanged sum means unchanged counts.
    #[inline]
    pub fn wasm_pages_counted(&self) -> u64 {
        self.wasm_pages_accessed() + self.wasm_pages_written()
    }

    /// Ends a message: returns the written pages (sorted). The heap stays as the message
    /// left it (closed where it did not open it) until [`HeapRegion::bytes_mut`] opens it
    /// or the next message's [`HeapRegion::arm`] closes it all. The Wasm page counts stay
    /// readable until then.
    pub fn disarm(&self) -> Result<Vec<u32>> {
        self.armed.store(false, Ordering::Release);
        let marks = self.marks();
        if marks.is_none() {
            self.closed.store(true, Ordering::Release);
        }
        let pages = self.len() / OS_PAGE;
        let mut written = Vec::new();
        let tracked = self.track_access.swap(false, Ordering::AcqRel);
        if let Some(marks) = marks {
            self.clear_marks(marks);
        }
        if let (HeapWrites::Logged(log), None) = (self.writes, marks) {
            // Only the Wasm pages made writable can hold written pages; the log is read
            // once per run of them.
            let base = self.base.load(Ordering::Acquire);
            let wasm_pages = pages.div_ceil(OS_PAGES_PER_WASM_PAGE);
            let mut runs: Vec<Range<usize>> = Vec::new();
            for (page, flag) in self.written.flags(wasm_pages).iter().enumerate() {
                if flag.swap(0, Ordering::Relaxed) == 1 {
                    match runs.last_mut() {
                        Some(run) if run.end == page => run.end = page + 1,
                        _ => runs.push(page..page + 1),
                    }
                }
            }
            let whole = self.whole_wasm_pages.load(Ordering::Acquire);
            for run in runs {
                if whole {
                    let end = (run.end * OS_PAGES_PER_WASM_PAGE).min(pages);
                    written.extend((run.start * OS_PAGES_PER_WASM_PAGE..end).map(|p| p as u32));
                    continue;
                }
                let bytes = run.start * WASM_PAGE..(run.end * WASM_PAGE).min(self.len());
                let first = written.len();
                log.written(base + bytes.start..base + bytes.end, &mut written)
                    .map_err(|e| wasmtime::format_err!("reading the heap's write log: {e}"))?;
                let offset = (bytes.start / OS_PAGE) as u32;
                for page in &mut written[first..] {
                    *page += offset;
                }
            }
        } else {
            for (page, flag) in self.dirty[..pages].iter().enumerate() {
                if flag.swap(0, Ordering::Relaxed) == 1 {
                    written.push(page as u32);
                }
            }
        }
        if tracked {
            let wasm_pages = pages.div_ceil(OS_PAGES_PER_WASM_PAGE);
            for flag in self
                .accessed
                .flags(wasm_pages)
                .iter()
                .chain(self.written.flags(wasm_pages))
            {
                flag.store(0, Ordering::Relaxed);
            }
        }
        Ok(written)
    }

    /// The message succeeded: the old bytes of its `pages` are not needed any more, and
    /// the pages are the heap's own now.
    pub fn keep(&self, pages: &[u32]) -> Result<()> {
        for &page in pages {
            self.clean[page as usize].store(0, Ordering::Relaxed);
        }
        self.forget_undo()
    }

    /// The message failed: its `pages` (what [`HeapRegion::disarm`] returned) get their
    /// old bytes back, those the heap had when it started; pages it grew are left alone.
    /// An error when the message kept no old bytes ([`Arming::undo`]).
    pub fn roll_back(&self, pages: &[u32]) -> Result<()> {
        if !self.undo_kept.load(Ordering::Acquire) {
            bail!("the message kept no old bytes to roll back to");
        }
        let had = self.armed_len.load(Ordering::Acquire) / OS_PAGE;
        let (clean, kept): (Vec<u32>, Vec<u32>) = pages
            .iter()
            .filter(|&&p| (p as usize) < had)
            .partition(|&&p| self.clean[p as usize].load(Ordering::Relaxed) == 1);
        // SAFETY: clean pages lie in the heap's private mapping of the view's file.
        unsafe { drop_private(self.base(), self.len(), &clean)? };
        for page in kept {
            let at = page as usize * OS_PAGE;
            // SAFETY: both ranges lie in our own mappings (a page the message wrote is
            // writable); the undo page was filled by this message's first write to it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (self.undo + at) as *const u8,
                    self.base().add(at),
                    OS_PAGE,
                )
            };
        }
        self.forget_undo()
    }

    fn forget_undo(&self) -> Result<()> {
        let used = self.undo_used.load(Ordering::Acquire);
        let copied = self.undo_copied.swap(0, Ordering::AcqRel);
        if used <= UNDO_KEPT_PAGES || copied * 2 >= used {
            return Ok(());
        }
        self.undo_used.store(0, Ordering::Release);
        let len = self.len();
        for resident in &self.undo_resident[..len / OS_PAGE] {
            resident.store(0, Ordering::Relaxed);
        }
        // SAFETY: the undo reservation's first `len` bytes, which nothing refers to between
        // messages; they read as zero afterwards.
        if len > 0 && unsafe { libc::madvise(self.undo as *mut _, len, libc::MADV_DONTNEED) } != 0 {
            bail!(
                "releasing a heap's undo pages failed: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// Called from the signal handler: atomics, a page copy into our own mapping and
    /// mprotect only (async-signal-safe). Returns true when the fault was a first write
    /// to a tracked page and is resolved. `write`: the fault is known to be a write's
    /// ([`fault_was_write`]).
    pub fn handle_fault(&self, addr: usize, write: bool) -> bool {
        if !self.armed.load(Ordering::Acquire) {
            return false;
        }
        let base = self.base.load(Ordering::Acquire);
        let len = self.len.load(Ordering::Acquire);
        if addr < base || addr >= base + len {
            return false;
        }
        let page = (addr - base) / OS_PAGE;
        let tracked = self.track_access.load(Ordering::Acquire);
        let wasm_page = page / OS_PAGES_PER_WASM_PAGE;
        if tracked && self.accessed.flag(wasm_page) {
            // The first access to this Wasm page: it becomes readable as a whole. A later
            // write faults again (on its 4 KiB page; with the kernel's log, once per Wasm
            // page).
            self.accessed.order.push(wasm_page);
            let wasm_addr = (base + wasm_page * WASM_PAGE) as *mut u8;
            let readable = protect(
                wasm_addr,
                WASM_PAGE.min(len - wasm_page * WASM_PAGE),
                libc::PROT_READ,
            )
            .is_ok();
            if !readable || !write {
                return readable;
            }
            // A write goes on as its second fault would, without taking it (the old bytes
            // it keeps are read from the page, readable now).
        }
        if let HeapWrites::Logged(log) = self.writes {
            return self.open_wasm_page(log, wasm_page, tracked);
        }
        if self.dirty[page].swap(1, Ordering::AcqRel) == 1 {
            // Already writable: this fault is not ours (e.g. a real protection error).
            return false;
        }
        if tracked {
            self.written.touch(wasm_page);
        }
        let page_addr = (base + page * OS_PAGE) as *mut u8;
        if (page + 1) * OS_PAGE <= self.armed_len.load(Ordering::Acquire)
            && self.clean[page].load(Ordering::Acquire) == 0
        {
            self.keep_old_bytes(page);
        }
        if protect(page_addr, OS_PAGE, libc::PROT_READ | libc::PROT_WRITE).is_err() {
            return false;
        }
        true
    }

    /// The first write to `wasm_page` in this message, with the kernel's log (which names
    /// the 4 KiB pages written): all of the Wasm page becomes writable, with the old bytes
    /// of each of its pages kept. Signal handler context, as [`HeapRegion::handle_fault`].
    fn open_wasm_page(&self, log: &WriteLog, wasm_page: usize, tracked: bool) -> bool {
        if !self.written.flag(wasm_page) {
            // Already writable: this fault is not ours (e.g. a real protection error).
            return false;
        }
        if tracked {
            self.written.order.push(wasm_page);
        }
        let first = wasm_page * OS_PAGES_PER_WASM_PAGE;
        let had = self.armed_len.load(Ordering::Acquire) / OS_PAGE;
        for page in first..(first + OS_PAGES_PER_WASM_PAGE).min(had) {
            if self.clean[page].load(Ordering::Acquire) == 0 {
                self.keep_old_bytes(page);
            }
        }
        let start = wasm_page * WASM_PAGE;
        let bytes = WASM_PAGE.min(self.len.load(Ordering::Acquire) - start);
        let addr = self.base.load(Ordering::Acquire) + start;
        let writable = || protect(addr as *mut u8, bytes, libc::PROT_READ | libc::PROT_WRITE);
        if self.whole_wasm_pages.load(Ordering::Acquire) {
            return writable().is_ok();
        }
        // The log starts for this Wasm page now (a page the message only read must not
        // read as written, and one written in an earlier message is logged again).
        self.register(log, wasm_page, addr..addr + bytes)
            && log.protect(addr..addr + bytes).is_ok()
            && writable().is_ok()
    }

    /// Every Wasm page registered with the kernel's log, or none; none one by one.
    fn mark_registered(&self, registered: bool) {
        for flag in self.registered.iter() {
            flag.store(registered as u8, Ordering::Relaxed);
        }
        self.registered_count.store(0, Ordering::Release);
    }

    /// Registers `wasm_page` (its `bytes`) with the kernel's log unless it is already.
    /// Signal handler context, as [`HeapRegion::handle_fault`].
    fn register(&self, log: &WriteLog, wasm_page: usize, bytes: Range<usize>) -> bool {
        if self.registered[wasm_page].load(Ordering::Acquire) == 1 {
            return true;
        }
        if log.register(bytes).is_err() {
            return false;
        }
        self.registered[wasm_page].store(1, Ordering::Release);
        self.registered_count.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// A first touch the module's code found (heap marks): `bytes` of the heap read, or
    /// written. Counts what the kernel's faults would have counted, in the order they would
    /// have come (a Wasm page's access before its first write), keeps the old bytes of the
    /// pages first written and marks them. Nothing for a range past the heap: the access
    /// traps without touching a page.
    pub fn touch(&self, bytes: Range<u64>, write: bool) {
        let Some(marks) = self.marks() else {
            return;
        };
        if !self.armed.load(Ordering::Acquire)
            || bytes.is_empty()
            || bytes.end > self.len.load(Ordering::Acquire) as u64
        {
            return;
        }
        let first = (bytes.start / OS_PAGE as u64) as usize;
        let last = ((bytes.end - 1) / OS_PAGE as u64) as usize;
        let tracked = self.track_access.load(Ordering::Acquire);
        for page in first..=last {
            let wasm_page = page / OS_PAGES_PER_WASM_PAGE;
            // SAFETY: the marks memory has a byte for every page of the largest heap.
            let mark = unsafe { &mut *marks.add(page) };
            if *mark & instrument::MARK_ACCESSED == 0 {
                self.mark_accessed(marks, wasm_page, tracked);
            }
            if write && *mark & instrument::HEAP_MARK_WRITTEN == 0 {
                *mark |= instrument::HEAP_MARK_WRITTEN;
                self.dirty[page].store(1, Ordering::Relaxed);
                if tracked {
                    self.written.touch(wasm_page);
                }
                if (page + 1) * OS_PAGE <= self.armed_len.load(Ordering::Acquire)
                    && self.clean[page].load(Ordering::Acquire) == 0
                {
                    self.keep_old_bytes(page);
                }
            }
        }
    }

    /// `wasm_page`'s first access in this message: counted (`tracked`), and all of its
    /// pages marked accessed.
    fn mark_accessed(&self, marks: *mut u8, wasm_page: usize, tracked: bool) {
        let first = wasm_page * OS_PAGES_PER_WASM_PAGE;
        for page in first..first + OS_PAGES_PER_WASM_PAGE {
            // SAFETY: as in `touch`: a Wasm page of the heap has its 16 bytes of marks.
            unsafe { *marks.add(page) |= instrument::MARK_ACCESSED };
        }
        self.marked.push(wasm_page);
        if tracked {
            self.accessed.touch(wasm_page);
        }
    }

    /// The message ended: the marks of every Wasm page it marked are cleared.
    fn clear_marks(&self, marks: *mut u8) {
        for wasm_page in self.marked.take() {
            let first = wasm_page * OS_PAGES_PER_WASM_PAGE;
            // SAFETY: the marks of a Wasm page the message marked.
            unsafe { std::ptr::write_bytes(marks.add(first), 0, OS_PAGES_PER_WASM_PAGE) };
        }
    }

    /// What the module's code asked for when it called `instrument::HEAP_TOUCH_IMPORT`:
    /// `len` bytes from `start` read or written (`kind`), or for a copy also `len` bytes from
    /// `source` read, touched.
    pub fn touch_request(&self, start: u64, len: u64, kind: i32, source: u64) {
        let range = |start: u64| start..start.saturating_add(len);
        match kind {
            instrument::TOUCH_READ => self.touch(range(start), false),
            instrument::TOUCH_WRITE => self.touch(range(start), true),
            _ => {
                // `memory.copy`: nothing unless both ranges lie in the heap.
                let heap = self.len.load(Ordering::Acquire) as u64;
                if range(source).end <= heap && range(start).end <= heap {
                    self.touch(range(source), false);
                    self.touch(range(start), true);
                }
            }
        }
    }

    /// Copies `page`'s bytes into its undo page, before the message first writes it, when
    /// the message keeps them.
    fn keep_old_bytes(&self, page: usize) {
        if !self.undo_kept.load(Ordering::Acquire) {
            return;
        }
        let at = page * OS_PAGE;
        // SAFETY: the page lies in the heap as it was at arming and is readable (armed);
        // the undo reservation is as large as the heap's and writable, and nothing else
        // uses this undo page in the message.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.base.load(Ordering::Acquire) + at) as *const u8,
                (self.undo + at) as *mut u8,
                OS_PAGE,
            )
        };
        self.undo_copied.fetch_add(1, Ordering::AcqRel);
        if self.undo_resident[page].swap(1, Ordering::Relaxed) == 0 {
            self.undo_used.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn grown(&self, old_len: usize, new_len: usize) -> Result<()> {
        let prot = if self.armed.load(Ordering::Acquire) && self.marks().is_none() {
            self.armed_protection()
        } else {
            libc::PROT_READ | libc::PROT_WRITE
        };
        // SAFETY: `old_len` is within the reservation (the memory only grows inside it).
        protect(unsafe { self.base().add(old_len) }, new_len - old_len, prot)?;
        self.len.store(new_len, Ordering::Release);
        Ok(())
    }
}

/// Reserves `len` bytes of address space, inaccessible until [`protect`]ed: the heap and
/// its copies are reservations of the largest heap that cost memory only where used.
pub(super) fn reserve(len: usize) -> std::io::Result<*mut u8> {
    super::map_anonymous(len, libc::PROT_NONE, RESERVATION)
}

/// [`reserve`], owned.
fn reserved(len: usize) -> std::io::Result<Mapping> {
    Mapping::anonymous(len, libc::PROT_NONE, RESERVATION)
}

/// A reservation: private, nothing accessible, no memory committed.
const RESERVATION: libc::c_int = libc::MAP_PRIVATE | libc::MAP_NORESERVE;

/// Gives the whole reservation one anonymous-memory identity (Linux's anon_vma) before it
/// is ever split. Dirty tracking splits the heap's mapping page by page in every message;
/// pieces that first get written separately each get an identity of their own and can never
/// merge again, so a large heap written in scattered places (a map of 10 KB rows on the
/// heap) piled up one mapping per row (58,681 host mappings at 60,000 rows of 10 KB; 66
/// with this) until the kernel's 65,530 (vm.max_map_count) ran out
/// and a legitimate write faulted as "heap out of bounds". A write now, while the mapping
/// is still one piece, lets all later pieces merge back. The byte written is 0, what a
/// fresh heap holds.
fn share_one_anon_vma(base: *mut u8, len: usize) -> Result<()> {
    protect(base, len, libc::PROT_READ | libc::PROT_WRITE)?;
    // SAFETY: the first byte of our own reservation, just made writable.
    unsafe { std::ptr::write_volatile(base, 0) };
    protect(base, len, libc::PROT_NONE)
}

/// Whether the fault a signal handler's `context` describes was a write: on x86-64 Linux
/// the page fault's error code says so (bit 1); elsewhere false, and a first write to an
/// inaccessible page faults twice, access then write (the same counts).
///
/// # Safety
/// `context` is the `ucontext_t` the kernel handed a SIGSEGV or SIGBUS handler.
pub unsafe fn fault_was_write(context: *const libc::c_void) -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        const WRITE: libc::greg_t = 1 << 1;
        // SAFETY: the caller's contract.
        let context = unsafe { &*context.cast::<libc::ucontext_t>() };
        context.uc_mcontext.gregs[libc::REG_ERR as usize] & WRITE != 0
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = context;
        false
    }
}

pub(super) fn protect(addr: *mut u8, len: usize, prot: libc::c_int) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the range lies inside a mapping this module created.
    let rc = unsafe { libc::mprotect(addr.cast(), len, prot) };
    if rc != 0 {
        bail!("mprotect failed: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// A Wasm linear memory in an mmap reservation we own.
struct TrackedMemory {
    region: Arc<HeapRegion>,
    mapping_len: usize,
    capacity: usize,
    maximum: usize,
}

// SAFETY: the mapping is owned by this value and never moves; sizes are page multiples.
unsafe impl LinearMemory for TrackedMemory {
    fn byte_size(&self) -> usize {
        self.region.len()
    }

    fn byte_capacity(&self) -> usize {
        self.capacity
    }

    fn grow_to(&mut self, new_size: usize) -> Result<()> {
        let old = self.region.len();
        if new_size > self.maximum || new_size > self.capacity {
            bail!(
                "heap limit of {} bytes reached",
                self.maximum.min(self.capacity)
            );
        }
        if new_size > old {
            self.region.grown(old, new_size)?;
        }
        Ok(())
    }

    fn as_ptr(&self) -> *mut u8 {
        self.region.base()
    }
}

impl Drop for TrackedMemory {
    fn drop(&mut self) {
        self.region.len.store(0, Ordering::Release);
        // SAFETY: unmapping our own reservations; wasmtime no longer uses them, and the
        // fault handler touches the undo pages only while a message runs.
        unsafe {
            libc::munmap(self.region.base().cast(), self.mapping_len);
            libc::munmap(self.region.undo as *mut _, self.capacity);
        }
    }
}

/// wasmtime's `memory_reservation`, set in the engine's configuration: the address space
/// wasmtime counts as a memory's (with its guard) whatever the memory's size.
pub const MEMORY_RESERVATION: usize = 4 << 30;

/// A memory of fixed size, readable and writable from the start, untracked: the
/// instrumentation declares its own memories with their maximum as their minimum, so they
/// never grow. Untouched pages cost no host memory.
struct PlainMemory {
    mapping: Mapping,
    len: usize,
}

impl PlainMemory {
    fn new(len: usize, guard: usize) -> std::result::Result<Self, String> {
        // wasmtime takes a fault anywhere in the memory's reservation and guard for the
        // memory's own (`wasm_fault`), so those addresses must be this memory's: another
        // memory there would be a second owner.
        let mapping_len = len.max(MEMORY_RESERVATION) + guard;
        let mapping = reserved(mapping_len)
            .map_err(|e| format!("cannot reserve {mapping_len} bytes for a memory: {e}"))?;
        protect(mapping.as_ptr(), len, libc::PROT_READ | libc::PROT_WRITE)
            .map_err(|e| e.to_string())?;
        Ok(PlainMemory { mapping, len })
    }
}

// SAFETY: the mapping is owned by this value and never moves; its size is fixed.
unsafe impl LinearMemory for PlainMemory {
    fn byte_size(&self) -> usize {
        self.len
    }

    fn byte_capacity(&self) -> usize {
        self.len
    }

    fn grow_to(&mut self, new_size: usize) -> Result<()> {
        if new_size > self.len {
            bail!("a memory of the instrumentation does not grow");
        }
        Ok(())
    }

    fn as_ptr(&self) -> *mut u8 {
        self.mapping.as_ptr()
    }
}

thread_local! {
    /// Memories created on this thread since the last `take_created`: instantiation is
    /// synchronous, so the canister picks up its heap right after instantiating.
    static CREATED: std::cell::RefCell<Vec<Arc<HeapRegion>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The regions wasmtime created on this thread since the last call.
pub fn take_created() -> Vec<Arc<HeapRegion>> {
    CREATED.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

pub struct HeapCreator;

// SAFETY: memories are zero-filled anonymous mappings with the requested guard left
// PROT_NONE after the reservation.
unsafe impl MemoryCreator for HeapCreator {
    fn new_memory(
        &self,
        ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> std::result::Result<Box<dyn LinearMemory>, String> {
        if CREATED.with(|c| !c.borrow().is_empty()) {
            // Not memory 0: the instrumentation's own memories (the cache of stable memory
            // for the native accesses and its marks), which nothing tracks.
            return PlainMemory::new(minimum, guard_size_in_bytes).map(|m| Box::new(m) as _);
        }
        let (max_heap, reserved) = if ty.is_64() {
            // Bounds-checked code: the reservation only has to hold the largest heap.
            (MAX_WASM64_HEAP_BYTES, MAX_WASM64_HEAP_BYTES)
        } else {
            (
                MAX_HEAP_BYTES,
                reserved_size_in_bytes.unwrap_or(MAX_HEAP_BYTES),
            )
        };
        if minimum > max_heap {
            return Err(format!(
                "the module's initial heap of {minimum} bytes is larger than the {max_heap}-byte maximum"
            ));
        }
        let writes = HeapWrites::configured()?;
        let maximum = maximum.unwrap_or(max_heap).min(max_heap);
        let capacity = reserved.max(minimum);
        let mapping_len = capacity + guard_size_in_bytes;
        let base = reserve(mapping_len)
            .map_err(|e| format!("cannot reserve {mapping_len} bytes for the heap: {e}"))?;
        share_one_anon_vma(base, mapping_len).map_err(|e| e.to_string())?;
        let undo = reserve(capacity)
            .and_then(|u| {
                protect(u, capacity, libc::PROT_READ | libc::PROT_WRITE)
                    .map(|()| u)
                    .map_err(std::io::Error::other)
            })
            .map_err(|e| {
                // SAFETY: the heap reservation just made, used by nothing yet.
                unsafe { libc::munmap(base.cast(), mapping_len) };
                format!("cannot reserve {capacity} bytes for the heap's undo log: {e}")
            })?;
        let region = Arc::new(HeapRegion::new(
            base as usize,
            0,
            capacity,
            undo as usize,
            writes,
        ));
        region.grown(0, minimum).map_err(|e| e.to_string())?;
        CREATED.with(|c| c.borrow_mut().push(region.clone()));
        Ok(Box::new(TrackedMemory {
            region,
            mapping_len,
            capacity,
            maximum,
        }))
    }
}

/// Drops the private copies of `pages` (sorted) of a private file mapping at `base`, one
/// `madvise` per run of consecutive pages: they read the file's bytes again.
///
/// # Safety
/// `base..base + len` must be a private mapping of a file this engine owns.
pub(super) unsafe fn drop_private(base: *mut u8, len: usize, pages: &[u32]) -> Result<()> {
    let mut i = 0;
    while i < pages.len() {
        let start = pages[i];
        let mut end = start + 1;
        i += 1;
        while i < pages.len() && pages[i] == end {
            end += 1;
            i += 1;
        }
        let range = page_range(start).start..page_range(end).start;
        if range.end > len {
            bail!("heap page {} is past the heap's {len} bytes", end - 1);
        }
        // SAFETY: inside the private file mapping, by the caller's contract.
        let rc = unsafe {
            libc::madvise(
                base.add(range.start).cast(),
                range.len(),
                libc::MADV_DONTNEED,
            )
        };
        if rc != 0 {
            bail!(
                "dropping copied heap pages failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Page indices as byte ranges, for copying dirty pages between copies of the heap.
pub fn page_range(page: u32) -> Range<usize> {
    let start = page as usize * OS_PAGE;
    start..start + OS_PAGE
}

#[cfg(test)]
mod tests;
mod touched;
