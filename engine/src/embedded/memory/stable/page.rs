//! Stable memory's 4 KiB pages: reference-counted, copied on write, and carved out of
//! 2 MiB blocks that the process maps once.
//!
//! Each page used to be an `Arc<[u8; 4096]>` from the C allocator. glibc grows a thread's
//! arena by exactly what an allocation needs, one `mprotect` per new 4 KiB page, and a
//! `mprotect` takes the process's mmap lock: the engine_speed bench's StableBTreeMap fill
//! made 56,144 in 201 messages against 5,603 now (`perf stat`).
//! A block gives 511 pages for one `mmap`, and the pool keeps freed pages for the next ones.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::Mutex;

use super::super::{map_anonymous, OS_PAGE};

pub type Page = [u8; OS_PAGE];

/// Blocks are this large and aligned to it: a page finds its block's first page, which
/// holds the reference counts, by masking its address.
const BLOCK_BYTES: usize = 2 << 20;
const PAGES_PER_BLOCK: usize = BLOCK_BYTES / OS_PAGE;

/// Free pages kept resident for reuse (256 MiB); past it, the oldest are given back to the
/// kernel down to [`RESIDENT_AFTER_RELEASE`], so that a dropped snapshot's pages do not
/// stay in the process's footprint.
const MAX_RESIDENT_FREE: usize = 65_536;
const RESIDENT_AFTER_RELEASE: usize = 32_768;

/// A stable memory page, shared until written: [`SharedPage::make_mut`] copies it if
/// anyone else holds it, as `Arc::make_mut` does.
pub struct SharedPage(NonNull<Page>);

// SAFETY: the bytes are only written through `make_mut`, which requires the one reference;
// the count is atomic (as `Arc<[u8; 4096]>`, which is Send and Sync).
unsafe impl Send for SharedPage {}
// SAFETY: as for Send.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// A page of zeros.
    pub fn zeroed() -> Self {
        let (page, zero) = POOL.allocate();
        if !zero {
            // SAFETY: a page just taken from the pool: nobody else refers to it.
            unsafe { (*page.as_ptr()).fill(0) };
        }
        SharedPage(page)
    }

    /// A page holding `bytes`.
    pub fn copy_of(bytes: &Page) -> Self {
        let (page, _) = POOL.allocate();
        // SAFETY: as in `zeroed`.
        unsafe { (*page.as_ptr()).copy_from_slice(bytes) };
        SharedPage(page)
    }

    /// The `count` pages of `file` from byte `offset` (a multiple of the page), mapped
    /// copy-on-write instead of copied: a state read from the cache holds only the pages
    /// its messages read, in the page cache, and the ones they write in memory of its own.
    #[cfg(target_os = "linux")]
    pub fn mapped(
        file: &std::fs::File,
        offset: u64,
        count: usize,
    ) -> std::io::Result<Vec<SharedPage>> {
        POOL.map_file(file, offset, count)
    }

    fn count(&self) -> &AtomicU32 {
        count_of(self.0)
    }

    /// Nobody else holds this page.
    pub fn is_unique(&self) -> bool {
        self.count().load(Ordering::Acquire) == 1
    }

    /// The bytes to write: this page's own if nobody else holds it, else a copy's.
    pub fn make_mut(this: &mut Self) -> &mut Page {
        if !this.is_unique() {
            *this = SharedPage::copy_of(this);
        }
        // SAFETY: the one reference (the Acquire load saw every other holder's release).
        unsafe { &mut *this.0.as_ptr() }
    }
}

impl Clone for SharedPage {
    fn clone(&self) -> Self {
        // As `Arc::clone`: a new reference is made from an existing one, so no ordering.
        if self.count().fetch_add(1, Ordering::Relaxed) > u32::MAX / 2 {
            std::process::abort();
        }
        SharedPage(self.0)
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        if self.count().fetch_sub(1, Ordering::Release) == 1 {
            // Every other holder's use of the bytes happened before this.
            fence(Ordering::Acquire);
            POOL.free(self.0);
        }
    }
}

impl Deref for SharedPage {
    type Target = Page;
    fn deref(&self) -> &Page {
        // SAFETY: a live page; writes need the one reference (`make_mut`).
        unsafe { self.0.as_ref() }
    }
}

/// The reference count of `page`: its block's first page holds one per page.
fn count_of(page: NonNull<Page>) -> &'static AtomicU32 {
    let address = page.as_ptr() as usize;
    let block = address & !(BLOCK_BYTES - 1);
    let index = (address - block) / OS_PAGE;
    // SAFETY: `page` was handed out by the pool, so it lies in a block whose first page is
    // the counts, which live as long as the process (blocks are never unmapped).
    unsafe { &*(block as *const AtomicU32).add(index) }
}

/// A block's first count, which no page uses (the counts' own page has none): 1 when the
/// block's pages are a file's, mapped copy-on-write ([`Pool::map_file`]).
fn file_flag(block: usize) -> &'static AtomicU32 {
    // SAFETY: as in `count_of`: the block's counts live as long as the process.
    unsafe { &*(block as *const AtomicU32) }
}

struct Pool {
    lists: Mutex<FreeLists>,
    max_resident_free: usize,
    resident_after_release: usize,
}

/// Addresses of free pages.
#[derive(Default)]
struct FreeLists {
    /// Free pages whose memory is resident (used before), newest last.
    resident: Vec<usize>,
    /// Free pages that read as zeros: given back to the kernel, or never touched.
    zero: Vec<usize>,
}

static POOL: Pool = Pool::new(MAX_RESIDENT_FREE, RESIDENT_AFTER_RELEASE);

impl Pool {
    const fn new(max_resident_free: usize, resident_after_release: usize) -> Self {
        Pool {
            lists: Mutex::new(FreeLists {
                resident: Vec::new(),
                zero: Vec::new(),
            }),
            max_resident_free,
            resident_after_release,
        }
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, FreeLists> {
        // The lists are consistent between any two statements: a panic elsewhere while the
        // lock was held leaves them usable.
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A page with a count of one, and whether it reads as zeros.
    fn allocate(&self) -> (NonNull<Page>, bool) {
        let (address, zero) = {
            let mut lists = self.lists();
            match lists.resident.pop() {
                Some(a) => (a, false),
                None => match lists.zero.pop() {
                    Some(a) => (a, true),
                    None => (lists.add_block(), true),
                },
            }
        };
        let page = NonNull::new(address as *mut Page).expect("pool pages are not null");
        count_of(page).store(1, Ordering::Relaxed);
        (page, zero)
    }

    fn free(&self, page: NonNull<Page>) {
        let released = {
            let mut lists = self.lists();
            lists.resident.push(page.as_ptr() as usize);
            if lists.resident.len() <= self.max_resident_free {
                return;
            }
            let excess = lists.resident.len() - self.resident_after_release;
            lists.resident.drain(..excess).collect::<Vec<usize>>()
        };
        // Outside the lock: the other threads' pages do not wait for the kernel.
        let (zeroed, kept) = give_back(released);
        let mut lists = self.lists();
        lists.zero.extend(zeroed);
        lists.resident.extend(kept);
    }

    /// [`SharedPage::mapped`]: blocks of their own, each page's count one. A freed page of
    /// such a block is reused as any other; given back, it becomes anonymous zeros again
    /// (`give_back`), not the file's bytes.
    #[cfg(target_os = "linux")]
    fn map_file(
        &self,
        file: &std::fs::File,
        offset: u64,
        count: usize,
    ) -> std::io::Result<Vec<SharedPage>> {
        use std::os::fd::AsRawFd;
        let mut pages = Vec::with_capacity(count);
        while pages.len() < count {
            let n = (count - pages.len()).min(PAGES_PER_BLOCK - 1);
            let block = map_block();
            let at = offset + (pages.len() * OS_PAGE) as u64;
            // SAFETY: the pages after the counts' of a block just mapped, which nothing
            // refers to; a private mapping of a file the caller keeps unchanged.
            let mapped = unsafe {
                libc::mmap(
                    (block + OS_PAGE) as *mut libc::c_void,
                    n * OS_PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_FIXED,
                    file.as_raw_fd(),
                    at as libc::off_t,
                )
            };
            let mut lists = self.lists();
            if mapped == libc::MAP_FAILED {
                let error = std::io::Error::last_os_error();
                // The block stays anonymous: its pages serve as new ones.
                lists
                    .zero
                    .extend((1..PAGES_PER_BLOCK).rev().map(|i| block + i * OS_PAGE));
                return Err(error);
            }
            file_flag(block).store(1, Ordering::Relaxed);
            lists
                .zero
                .extend((n + 1..PAGES_PER_BLOCK).rev().map(|i| block + i * OS_PAGE));
            drop(lists);
            pages.extend((1..=n).map(|i| {
                let page = NonNull::new((block + i * OS_PAGE) as *mut Page)
                    .expect("pool pages are not null");
                count_of(page).store(1, Ordering::Relaxed);
                SharedPage(page)
            }));
        }
        Ok(pages)
    }
}

impl FreeLists {
    /// Maps a new block, puts all its pages but the counts' and the one returned on the
    /// zero list.
    fn add_block(&mut self) -> usize {
        let block = map_block();
        // Popped from the end: the block's pages go out in address order.
        self.zero
            .extend((2..PAGES_PER_BLOCK).rev().map(|i| block + i * OS_PAGE));
        block + OS_PAGE
    }
}

/// A fresh block of `BLOCK_BYTES` aligned to its size: twice as much is mapped and the
/// ends cut off.
fn map_block() -> usize {
    let length = 2 * BLOCK_BYTES;
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let Ok(mapped) = map_anonymous(length, prot, libc::MAP_PRIVATE | libc::MAP_NORESERVE) else {
        let layout = std::alloc::Layout::from_size_align(BLOCK_BYTES, BLOCK_BYTES)
            .expect("the block's layout is valid");
        std::alloc::handle_alloc_error(layout);
    };
    let start = mapped as usize;
    let block = (start + BLOCK_BYTES - 1) & !(BLOCK_BYTES - 1);
    let (head, tail) = (block - start, start + length - (block + BLOCK_BYTES));
    // SAFETY: the parts of our own mapping outside the block; failing to unmap them only
    // costs address space.
    unsafe {
        if head > 0 {
            libc::munmap(mapped.cast(), head);
        }
        if tail > 0 {
            libc::munmap((block + BLOCK_BYTES) as *mut libc::c_void, tail);
        }
    }
    block
}

/// Gives the free pages at `addresses` back to the kernel, one call per run of
/// neighbouring pages: those it took (which now read as zeros), and those it refused
/// (which keep their bytes and memory).
fn give_back(mut addresses: Vec<usize>) -> (Vec<usize>, Vec<usize>) {
    addresses.sort_unstable();
    let (mut zeroed, mut kept) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < addresses.len() {
        let first = i;
        let mut end = addresses[i] + OS_PAGE;
        i += 1;
        while i < addresses.len() && addresses[i] == end {
            end += OS_PAGE;
            i += 1;
        }
        let start = addresses[first];
        // A run never crosses into another block: each block starts with its counts' page,
        // which is never free.
        let rc = if file_flag(start & !(BLOCK_BYTES - 1)).load(Ordering::Relaxed) == 1 {
            // Dropped, a file's page would read as the file again: fresh anonymous memory
            // in its place reads as zeros.
            // SAFETY: as below; MAP_FIXED replaces only these free pages.
            let at = unsafe {
                libc::mmap(
                    start as *mut libc::c_void,
                    end - start,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if at == libc::MAP_FAILED {
                -1
            } else {
                0
            }
        } else {
            // SAFETY: free pages of our blocks, which nothing refers to.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) }
        };
        let run = &addresses[first..i];
        if rc == 0 { &mut zeroed } else { &mut kept }.extend_from_slice(run);
    }
    (zeroed, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_a_shared_page_copies_it_and_writing_a_unique_one_does_not() {
        let original = SharedPage::copy_of(&[7; OS_PAGE]);
        let mut copy = original.clone();
        assert!(!original.is_unique() && !copy.is_unique());
        SharedPage::make_mut(&mut copy)[0] = 1;
        assert_eq!((original[0], original[1], copy[0], copy[1]), (7, 7, 1, 7));
        assert!(original.is_unique() && copy.is_unique());
        let before = copy.0;
        SharedPage::make_mut(&mut copy)[1] = 2;
        assert_eq!(copy.0, before, "a unique page is written in place");
        assert_eq!(copy[1], 2);
    }

    #[test]
    fn a_page_reused_from_the_pool_starts_as_zeros() {
        for _ in 0..100 {
            drop(SharedPage::copy_of(&[0xff; OS_PAGE]));
            let page = SharedPage::zeroed();
            assert!(page.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn references_taken_and_dropped_on_many_threads_leave_one() {
        let page = SharedPage::copy_of(&[3; OS_PAGE]);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..10_000 {
                        let held = page.clone();
                        assert_eq!(held[4095], 3);
                    }
                });
            }
        });
        assert!(page.is_unique());
    }

    /// Frees `pages` into `pool`; its free lists after, resident then zero.
    fn free_all(pool: &Pool, pages: &[NonNull<Page>]) -> (Vec<usize>, Vec<usize>) {
        for &page in pages {
            pool.free(page);
        }
        let lists = pool.lists();
        (lists.resident.clone(), lists.zero.clone())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn pages_mapped_from_a_file_hold_its_bytes_are_written_privately_and_go_back_as_zeros() {
        use std::io::Write;
        let count = PAGES_PER_BLOCK + 10; // two blocks
        let bytes: Vec<u8> = (0..count * OS_PAGE)
            .map(|i| (i / OS_PAGE + i) as u8)
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[0xee; OS_PAGE]).unwrap();
        file.write_all(&bytes).unwrap();
        let pool = Pool::new(8, 4);
        let mut pages = pool.map_file(&file, OS_PAGE as u64, count).unwrap();
        for (i, page) in pages.iter().enumerate() {
            assert!(
                page[..] == bytes[i * OS_PAGE..(i + 1) * OS_PAGE],
                "page {i}"
            );
            assert!(page.is_unique());
        }
        // The one reference writes in place, into the process's copy, not the file.
        SharedPage::make_mut(&mut pages[3])[0] ^= 0xff;
        assert_eq!(pages[3][0], bytes[3 * OS_PAGE] ^ 0xff);
        let mut on_disk = vec![0; OS_PAGE];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut on_disk, 4 * OS_PAGE as u64).unwrap();
        assert!(on_disk[..] == bytes[3 * OS_PAGE..4 * OS_PAGE]);
        // Freed into this pool (not the process's): past the limit they are given back and
        // read as zeros, as any page on the zero list must.
        let raw: Vec<NonNull<Page>> = pages
            .into_iter()
            .map(|page| {
                let raw = page.0;
                std::mem::forget(page);
                raw
            })
            .collect();
        let (resident, zero) = free_all(&pool, &raw);
        assert!(resident.len() <= 8);
        let given_back: Vec<usize> = raw
            .iter()
            .map(|p| p.as_ptr() as usize)
            .filter(|a| zero.contains(a))
            .collect();
        assert_eq!(given_back.len() + resident.len(), count);
        for address in given_back {
            // SAFETY: a free page of the test's pool, mapped for the process's life.
            let page = unsafe { &*(address as *const Page) };
            assert!(
                page.iter().all(|&b| b == 0),
                "a page given back reads as zeros"
            );
        }
        // The second block's slots past the file's pages are free and zero.
        assert_eq!(
            zero.len() - (count - resident.len()),
            2 * (PAGES_PER_BLOCK - 1) - count
        );
    }

    #[test]
    fn free_pages_past_the_resident_limit_go_back_to_the_kernel_and_read_as_zeros() {
        let pool = Pool::new(8, 4);
        let pages: Vec<NonNull<Page>> = (0..20)
            .map(|i| {
                let (page, zero) = pool.allocate();
                assert!(zero, "a new block's pages are zeros");
                assert_ne!(
                    page.as_ptr() as usize % BLOCK_BYTES,
                    0,
                    "never the counts' page"
                );
                // SAFETY: the test's own page.
                unsafe { (*page.as_ptr()).fill(i + 1) };
                page
            })
            .collect();
        let (resident, zero) = free_all(&pool, &pages);
        // The 9th free gave back 5 (down to 4), the 14th and the 19th 5 each: 4 + 1 left.
        assert_eq!(resident.len(), 5);
        let given_back: Vec<&usize> = zero
            .iter()
            .filter(|a| pages.iter().any(|p| p.as_ptr() as usize == **a))
            .collect();
        assert_eq!(given_back.len(), 15);
        for &&address in &given_back {
            // SAFETY: a free page of the test's pool, mapped for the process's life.
            let bytes = unsafe { &*(address as *const Page) };
            assert!(
                bytes.iter().all(|&b| b == 0),
                "a page given back reads as zeros"
            );
        }
        // The resident ones are handed out first, with their old bytes (so not zero).
        for _ in 0..5 {
            let (page, zero) = pool.allocate();
            assert!(!zero);
            assert!(resident.contains(&(page.as_ptr() as usize)));
        }
        let (_, zero) = pool.allocate();
        assert!(zero);
    }
}
