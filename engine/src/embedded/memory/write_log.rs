//! Which 4 KiB pages of a heap a message wrote, kept by the kernel instead of one signal
//! and one `mprotect` per page.
//!
//! Linux (6.7 and later) can write-protect memory at the page-table level for a
//! userfaultfd in asynchronous mode (`UFFD_FEATURE_WP_ASYNC`): a write to a protected page
//! faults, the kernel lifts the protection itself and goes on, and the `PAGEMAP_SCAN` ioctl
//! of `/proc/self/pagemap` then lists the pages written since the last protection
//! (`PAGE_IS_WRITTEN`). No signal, no change of the process's mappings, no lock on its
//! address space held for writing. Like a protection fault, it sees every store, also one
//! that writes the bytes a page already held, so it finds exactly the pages the per-page
//! faults find (tests/it/heap_writes.rs runs both and compares).
//!
//! Unprivileged processes get such a userfaultfd with `UFFD_USER_MODE_ONLY` (5.11+), which
//! is all this needs: the heap is written by Wasm code and by the host's own copies, both in
//! user mode. Where any of it is missing the heap falls back to a fault per written page.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::{Mapping, OS_PAGE};

/// Whether modules get heap marks where they allow them (`marks`). Not the default: the
/// checks make a module several times slower to compile and memory-bound code up to twice as
/// slow to run, which the signals they save pay back only in a run from the cache
/// (docs/performance.md).
pub fn heap_marks_configured() -> bool {
    std::env::var(HEAP_WRITES_ENV).is_ok_and(|v| v == "marks")
}

/// The environment variable that chooses how a message's first touches of heap pages are
/// found: `auto` (protection faults, the written pages from the kernel's write log where the
/// kernel has it), `marks` (the module's own heap marks where it allows them, else as
/// `auto`) or `faults` (a protection fault per written page too).
pub const HEAP_WRITES_ENV: &str = "ICBENCH_HEAP_WRITES";

// The kernel's ABI (include/uapi/linux/userfaultfd.h and fs.h), not in every libc yet.
const UFFD_API: u64 = 0xaa;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_WP_UNPOPULATED: u64 = 1 << 13;
const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
/// `_IOWR(0xAA, 0x3F, struct uffdio_api)` (24 bytes).
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
/// `_IOWR(0xAA, 0x00, struct uffdio_register)` (32 bytes).
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
/// `_IOWR('f', 16, struct pm_scan_arg)` (96 bytes).
const PAGEMAP_SCAN: libc::c_ulong = 0xc060_6610;
const PM_SCAN_WP_MATCHING: u64 = 1 << 0;
const PM_SCAN_CHECK_WPASYNC: u64 = 1 << 1;
const PAGE_IS_WRITTEN: u64 = 1 << 1;
const PAGE_IS_FILE: u64 = 1 << 2;
const PAGE_IS_PRESENT: u64 = 1 << 3;
const PAGE_IS_SWAPPED: u64 = 1 << 4;
const PAGE_IS_PFNZERO: u64 = 1 << 5;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

/// How a heap finds the pages a message wrote.
#[derive(Clone, Copy)]
pub enum HeapWrites {
    /// A protection fault on every first write to a 4 KiB page.
    Faults,
    /// The kernel's write log; a fault only on the first write to each 64 KiB Wasm page.
    Logged(&'static WriteLog),
}

impl HeapWrites {
    /// What `ICBENCH_HEAP_WRITES` asks for, decided once per process.
    pub fn configured() -> Result<HeapWrites, String> {
        static CHOICE: OnceLock<Result<HeapWrites, String>> = OnceLock::new();
        CHOICE
            .get_or_init(|| {
                let value = std::env::var(HEAP_WRITES_ENV).unwrap_or_default();
                match value.as_str() {
                    "" | "auto" | "marks" => Ok(match WriteLog::shared() {
                        Some(log) => HeapWrites::Logged(log),
                        None => HeapWrites::Faults,
                    }),
                    "faults" => Ok(HeapWrites::Faults),
                    other => Err(format!(
                        "{HEAP_WRITES_ENV}={other:?}: expected \"auto\" (the kernel's write log where it has one), \"marks\" (heap marks in the module where it allows them, else as \"auto\") or \"faults\" (a protection fault per written page)"
                    )),
                }
            })
            .clone()
    }

    /// What a run says found its heap writes.
    pub fn said(self) -> String {
        if heap_marks_configured() {
            format!("heap marks (modules without them: {})", self.name())
        } else {
            self.name().to_string()
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            HeapWrites::Faults => "faults",
            HeapWrites::Logged(_) => "kernel write log",
        }
    }
}

/// Bumped when a forked child takes descriptors of its own ([`WriteLog::reopen_in_child`]);
/// starts at 1, so that 0 can mean "never registered".
static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The process's userfaultfd in asynchronous write-protect mode and its pagemap.
pub struct WriteLog {
    uffd: OwnedFd,
    pagemap: File,
}

impl WriteLog {
    /// The process's log, if the kernel provides one (probed once).
    pub fn shared() -> Option<&'static WriteLog> {
        static LOG: OnceLock<Option<WriteLog>> = OnceLock::new();
        LOG.get_or_init(|| WriteLog::open().ok()).as_ref()
    }

    #[cfg(not(target_os = "linux"))]
    fn open() -> io::Result<WriteLog> {
        Err(io::Error::other("the kernel's write log is Linux's"))
    }

    #[cfg(target_os = "linux")]
    fn open() -> io::Result<WriteLog> {
        let (uffd, pagemap) = Self::open_fds()?;
        let log = WriteLog { uffd, pagemap };
        log.probe()?;
        Ok(log)
    }

    /// A userfaultfd in asynchronous write-protect mode and `/proc/self/pagemap`: both
    /// belong to the calling process's address space.
    #[cfg(target_os = "linux")]
    fn open_fds() -> io::Result<(OwnedFd, File)> {
        // SAFETY: a plain system call; the result is a new descriptor or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_userfaultfd,
                libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned to us and is owned by nobody else.
        let uffd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
            ioctls: 0,
        };
        // SAFETY: the ioctl reads and writes exactly a `struct uffdio_api`.
        if unsafe { libc::ioctl(uffd.as_raw_fd(), UFFDIO_API, &mut api) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((uffd, File::open("/proc/self/pagemap")?))
    }

    /// Which set of descriptors the log uses: a heap registered under another must be
    /// registered again ([`WriteLog::reopen_in_child`]).
    pub fn generation(&self) -> u64 {
        GENERATION.load(Ordering::Acquire)
    }

    /// In a child process just forked (one thread): the inherited userfaultfd and pagemap
    /// are the parent's address space's, and the child's mappings lost their registration,
    /// so the log takes descriptors of the child's own, under the same numbers, and every
    /// heap registers again before its next message.
    #[cfg(target_os = "linux")]
    pub fn reopen_in_child(&self) -> io::Result<()> {
        let (uffd, pagemap) = Self::open_fds()?;
        for (new, old) in [
            (uffd.as_raw_fd(), self.uffd.as_raw_fd()),
            (pagemap.as_raw_fd(), self.pagemap.as_raw_fd()),
        ] {
            // SAFETY: both descriptors are open; `old` now names what `new` names (the
            // log's own descriptors stay valid), and `new` is closed when dropped below.
            if unsafe { libc::dup3(new, old, libc::O_CLOEXEC) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        GENERATION.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn reopen_in_child(&self) -> io::Result<()> {
        Ok(())
    }

    /// Checks on a scratch mapping that a write is logged and a read is not (a kernel
    /// without `PAGEMAP_SCAN` fails here).
    fn probe(&self) -> io::Result<()> {
        let scratch = Scratch::new(self, 4)?;
        self.protect(scratch.range())?;
        scratch.write(2, 1);
        scratch.read(1);
        let mut written = Vec::new();
        self.written(scratch.range(), &mut written)?;
        if written != [2] {
            return Err(io::Error::other(format!(
                "the kernel's write log found pages {written:?}, not [2]"
            )));
        }
        Ok(())
    }

    /// Registers `range` (page-aligned, mapped) for write protection and keeps it out of
    /// transparent huge pages ([`WriteLog::keep_out_of_huge_pages`], [`WriteLog::register`]).
    pub fn prepare(&self, range: Range<usize>) -> io::Result<()> {
        self.keep_out_of_huge_pages(range.clone())?;
        self.register(range)
    }

    /// Keeps `range` out of transparent huge pages, whose writes the log would report 2 MiB
    /// at a time.
    pub fn keep_out_of_huge_pages(&self, range: Range<usize>) -> io::Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        // SAFETY: advice on the caller's own mapping.
        #[cfg(target_os = "linux")]
        if unsafe { libc::madvise(range.start as *mut _, range.len(), libc::MADV_NOHUGEPAGE) } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Registers `range` (page-aligned, mapped) for write protection. Needed again after
    /// anything is mapped over part of it. The kernel maps no neighbouring pages on a read
    /// fault in a registered range (no fault-around): a heap registers only what it writes.
    /// A plain system call: safe in a signal handler.
    pub fn register(&self, range: Range<usize>) -> io::Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let mut reg = UffdioRegister {
            start: range.start as u64,
            len: range.len() as u64,
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: the ioctl reads and writes exactly a `struct uffdio_register`.
        if unsafe { libc::ioctl(self.uffd.as_raw_fd(), UFFDIO_REGISTER, &mut reg) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Write-protects the pages of `range` (a registered range) that are mapped: the log
    /// starts empty. An unmapped page is left without a marker, so a first write to it
    /// maps it writable at once (one fault, not a fault and then a write-protect fault),
    /// and [`WriteLog::written`] tells it from a page only read by what the read mapped.
    pub fn protect(&self, range: Range<usize>) -> io::Result<()> {
        let mut arg = PmScanArg {
            flags: PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
            category_anyof_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            return_mask: PAGE_IS_PRESENT,
            ..PmScanArg::default()
        };
        // With nowhere to list pages the kernel protects every page, unmapped ones too
        // (its fast path skips the categories).
        let mut regions = [PageRegion::default(); 64];
        self.scan(range, &mut arg, &mut regions, |_| {})
    }

    /// Appends the pages of `range` written since [`WriteLog::protect`], as page numbers
    /// counted from `range.start`, in order. A page unmapped at the protection is not
    /// write-protected: a read maps it unwritten (the file's page of a private file
    /// mapping, the zero page of an anonymous one), a write gives it a page of its own.
    /// The heaps are private mappings: a write never leaves a file's page in place.
    pub fn written(&self, range: Range<usize>, out: &mut Vec<u32>) -> io::Result<()> {
        let mut arg = PmScanArg {
            category_inverted: PAGE_IS_FILE | PAGE_IS_PFNZERO,
            category_mask: PAGE_IS_WRITTEN | PAGE_IS_FILE | PAGE_IS_PFNZERO,
            // The kernel counts an unmapped page without a marker as written.
            category_anyof_mask: PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
            return_mask: PAGE_IS_WRITTEN,
            ..PmScanArg::default()
        };
        let mut regions = [PageRegion::default(); 512];
        let start = range.start;
        self.scan(range, &mut arg, &mut regions, |r| {
            let first = (r.start as usize - start) / OS_PAGE;
            let end = (r.end as usize - start) / OS_PAGE;
            out.extend((first..end).map(|p| p as u32));
        })
    }

    fn scan(
        &self,
        range: Range<usize>,
        arg: &mut PmScanArg,
        regions: &mut [PageRegion],
        mut each: impl FnMut(&PageRegion),
    ) -> io::Result<()> {
        arg.size = std::mem::size_of::<PmScanArg>() as u64;
        arg.start = range.start as u64;
        arg.end = range.end as u64;
        arg.vec = regions.as_mut_ptr() as u64;
        arg.vec_len = regions.len() as u64;
        while arg.start < arg.end {
            // SAFETY: the ioctl reads `arg` and writes at most `vec_len` regions to `vec`.
            let n = unsafe { libc::ioctl(self.pagemap.as_raw_fd(), PAGEMAP_SCAN, &mut *arg) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            regions[..n as usize].iter().for_each(&mut each);
            if arg.walk_end <= arg.start {
                return Err(io::Error::other("PAGEMAP_SCAN made no progress"));
            }
            arg.start = arg.walk_end;
        }
        Ok(())
    }
}

/// A private anonymous mapping registered with the log, unmapped on drop: the probe's, and
/// the tests'.
struct Scratch {
    mapping: Mapping,
}

impl Scratch {
    fn new(log: &WriteLog, pages: usize) -> io::Result<Scratch> {
        let len = pages * OS_PAGE;
        let mapping =
            Mapping::anonymous(len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE)?;
        let scratch = Scratch { mapping };
        log.prepare(scratch.range())?;
        Ok(scratch)
    }

    fn range(&self) -> Range<usize> {
        let base = self.mapping.as_ptr() as usize;
        base..base + self.mapping.size()
    }

    fn write(&self, page: usize, value: u8) {
        // SAFETY: inside the mapping.
        unsafe {
            std::ptr::write_volatile((self.range().start + page * OS_PAGE + 7) as *mut u8, value)
        }
    }

    fn read(&self, page: usize) -> u8 {
        // SAFETY: inside the mapping.
        unsafe { std::ptr::read_volatile((self.range().start + page * OS_PAGE + 7) as *const u8) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(log: &WriteLog, s: &Scratch) -> Vec<u32> {
        let mut out = Vec::new();
        log.written(s.range(), &mut out).unwrap();
        out
    }

    #[test]
    fn logs_writes_also_of_unchanged_bytes_and_not_reads() {
        let Some(log) = WriteLog::shared() else {
            eprintln!("no kernel write log here (needs Linux 6.7+): nothing to check");
            return;
        };
        let s = Scratch::new(log, 40).unwrap();
        s.write(3, 9);
        log.protect(s.range()).unwrap();
        assert_eq!(written(log, &s), Vec::<u32>::new());
        assert_eq!(s.read(3) + s.read(5), 9); // a populated page and an untouched one
        s.write(7, 0); // the byte it held
        s.write(3, 9); // the byte it held
        s.write(39, 1);
        assert_eq!(written(log, &s), [3, 7, 39]);
        log.protect(s.range()).unwrap();
        assert_eq!(written(log, &s), Vec::<u32>::new());
    }

    #[test]
    fn a_private_file_mapping_logs_its_writes_not_its_reads() {
        use std::io::Write;
        let Some(log) = WriteLog::shared() else {
            return;
        };
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[5; 8 * OS_PAGE]).unwrap();
        // SAFETY: a fresh private mapping of our own file, unmapped by the Scratch.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8 * OS_PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the mapping just made, which nothing else owns.
        let mapping = unsafe { Mapping::adopt(base.cast(), 8 * OS_PAGE) };
        let s = Scratch { mapping };
        log.prepare(s.range()).unwrap();
        assert_eq!(s.read(1), 5); // mapped before the protection
        s.write(6, 5); // a page of its own before the protection
        log.protect(s.range()).unwrap();
        assert_eq!(s.read(1) + s.read(2) + s.read(6), 15); // the file's pages, and its own
        s.write(3, 5); // unmapped until now
        s.write(1, 5);
        s.write(4, 5);
        assert_eq!(s.read(4) + s.read(5), 10);
        assert_eq!(written(log, &s), [1, 3, 4]);
        log.protect(s.range()).unwrap();
        assert_eq!(s.read(3) + s.read(7), 10);
        assert_eq!(written(log, &s), Vec::<u32>::new());
        s.write(3, 5);
        s.write(7, 5);
        assert_eq!(written(log, &s), [3, 7]);
    }

    #[test]
    fn protection_changes_keep_the_log() {
        let Some(log) = WriteLog::shared() else {
            return;
        };
        let s = Scratch::new(log, 32).unwrap();
        log.protect(s.range()).unwrap();
        let prot = |pages: Range<usize>, p| {
            super::super::heap::protect(
                (s.range().start + pages.start * OS_PAGE) as *mut u8,
                pages.len() * OS_PAGE,
                p,
            )
            .unwrap()
        };
        // The memory tracker's order: inaccessible, readable per Wasm page, then writable.
        prot(0..32, libc::PROT_NONE);
        prot(16..32, libc::PROT_READ);
        s.read(17);
        prot(16..32, libc::PROT_READ | libc::PROT_WRITE);
        s.write(18, 4);
        prot(0..32, libc::PROT_READ | libc::PROT_WRITE);
        assert_eq!(written(log, &s), [18]);
    }
}
