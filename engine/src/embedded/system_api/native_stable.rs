//! The host's side of the native stable accesses: the stable pages the instrumented code
//! reads and writes in its own cache memory without a host call, kept equal to stable
//! memory around every host access and written back when the message ends.

use wasmtime::{Global, Result, Val};

use super::HostState;
use crate::embedded::memory::stable::StableMemory;
use crate::embedded::memory::OS_PAGE;
use crate::instrument;

/// The host's side of the native stable accesses (see [`instrument::STABLE_CACHE_EXPORT`]):
/// after each of its own stable memory accesses the host marks the pages and keeps the
/// cache of marked pages equal to stable memory. Pages marked written may be written by
/// the injected function, in the cache only: the host copies them back into stable memory
/// before it accesses them itself and when the message ends.
pub struct NativeStable {
    /// Base addresses of the cache and the marks (memories of fixed size, which never
    /// move while the instance lives).
    cache: usize,
    marks: usize,
    /// The global holding the stable memory's size for the injected function.
    bytes: Global,
    /// Pages marked in the current message, and those of them marked written.
    marked: Vec<u64>,
    written: Vec<u64>,
    /// Cache pages filled since the cache was last given back, and the end of the highest.
    filled: usize,
    filled_end: usize,
}

/// Past this many cache pages filled (4 MiB) the cache is given back to the kernel when
/// the message ends: an idle canister (a snapshot's, a fork's) keeps no second copy of the
/// stable pages its last message used.
const CACHE_KEPT_PAGES: usize = 1_024;
/// At most this many pages (128 MiB) are cached at once; the accesses to pages past it stay
/// host calls. A message that inserts half a million rows touches more stable memory than
/// that, and two such messages run side by side on two workers.
const CACHE_MAX_PAGES: usize = 32_768;

impl NativeStable {
    pub fn new(
        store: &mut wasmtime::Store<HostState>,
        instance: &wasmtime::Instance,
    ) -> Option<Self> {
        let cache = instance.get_memory(&mut *store, instrument::STABLE_CACHE_EXPORT)?;
        let marks = instance.get_memory(&mut *store, instrument::STABLE_MARKS_EXPORT)?;
        let bytes = instance.get_global(&mut *store, instrument::STABLE_BYTES_EXPORT)?;
        Some(NativeStable {
            cache: cache.data_ptr(&*store) as usize,
            marks: marks.data_ptr(&*store) as usize,
            bytes,
            marked: Vec::new(),
            written: Vec::new(),
            filled: 0,
            filled_end: 0,
        })
    }

    /// A message starts: no page is marked.
    pub fn begin(&mut self) {
        for &page in &self.marked {
            // SAFETY: every marked page lies inside the marks memory (see `note`).
            unsafe { *((self.marks + page as usize) as *mut u8) = 0 };
        }
        self.marked.clear();
        self.written.clear();
    }

    /// The message's code has ended (whether it replied or trapped): stable memory gets the
    /// pages written in the cache, before it is committed or rolled back, and a large
    /// cache goes back to the kernel.
    pub fn finish(&mut self, stable: &mut StableMemory) {
        self.write_back_all(stable);
        if self.filled > CACHE_KEPT_PAGES {
            // Unmark first: a cached page's mark says its bytes are current.
            self.begin();
            // SAFETY: the cache's own pages, which only marked pages' accesses use, and
            // none is marked now. Failing to give them back only costs memory.
            unsafe { libc::madvise(self.cache as *mut _, self.filled_end, libc::MADV_DONTNEED) };
            self.filled = 0;
            self.filled_end = 0;
        }
    }

    fn mark(&self, page: u64) -> *mut u8 {
        (self.marks + page as usize) as *mut u8
    }

    fn cached(&self, page: u64) -> &[u8] {
        // SAFETY: only called for marked pages, which lie inside the cache; no Wasm runs
        // while the host holds the slice.
        unsafe {
            std::slice::from_raw_parts((self.cache + page as usize * OS_PAGE) as *const u8, OS_PAGE)
        }
    }

    /// Copies the pages of the range that the injected function may have written back into
    /// `stable`, before the host accesses them.
    pub(super) fn write_back_range(&self, stable: &mut StableMemory, offset: u64, len: u64) {
        if self.written.is_empty() || len == 0 {
            return;
        }
        let end = offset
            .saturating_add(len)
            .min(instrument::STABLE_CACHE_BYTES);
        let page_size = OS_PAGE as u64;
        for page in offset / page_size..end.div_ceil(page_size) {
            // SAFETY: `page` lies inside the cache, so its mark inside the marks.
            if unsafe { *self.mark(page) } as i32 == instrument::MARK_WRITTEN {
                stable.write_back(page, self.cached(page));
            }
        }
    }

    /// Copies every page the injected function may have written back into `stable`: the
    /// message has ended.
    fn write_back_all(&self, stable: &mut StableMemory) {
        for &page in &self.written {
            stable.write_back(page, self.cached(page));
        }
    }

    /// The host read (`written` = `None`) or wrote `len` bytes at `offset`, successfully:
    /// counts the range's accesses to each page, caches a page at its
    /// [`instrument::MARK_SEEN`]th (its bytes from `stable`), and writes `written` into the
    /// cache of pages cached before.
    pub(super) fn note(
        &mut self,
        stable: &StableMemory,
        offset: u64,
        len: u64,
        written: Option<&[u8]>,
    ) {
        // The part of the range the cache covers (a write across its end changes cached
        // bytes too).
        let end = (offset + len).min(instrument::STABLE_CACHE_BYTES);
        if offset >= end {
            return;
        }
        const SEEN: u8 = instrument::MARK_SEEN as u8;
        const CACHED: u8 = instrument::MARK_CACHED as u8;
        const WRITTEN: u8 = instrument::MARK_WRITTEN as u8;
        let page_size = OS_PAGE as u64;
        for page in offset / page_size..=(end - 1) / page_size {
            let mark = self.mark(page);
            let cached = (self.cache + page as usize * OS_PAGE) as *mut u8;
            // SAFETY: `end` is within the cache, and the marks hold a byte per cache page;
            // no Wasm runs during a host call.
            unsafe {
                match *mark {
                    0..SEEN => {
                        if *mark == 0 {
                            self.marked.push(page);
                        }
                        *mark += 1;
                    }
                    SEEN if self.filled >= CACHE_MAX_PAGES => {}
                    SEEN => {
                        match stable.page_bytes(page) {
                            Some(bytes) => {
                                std::ptr::copy_nonoverlapping(bytes.as_ptr(), cached, OS_PAGE)
                            }
                            None => std::ptr::write_bytes(cached, 0, OS_PAGE),
                        }
                        *mark = CACHED;
                        self.filled += 1;
                        self.filled_end = self.filled_end.max((page as usize + 1) * OS_PAGE);
                    }
                    _ => {
                        if let Some(data) = written {
                            let from = (page * page_size).max(offset);
                            let to = ((page + 1) * page_size).min(end);
                            let src = &data[(from - offset) as usize..(to - offset) as usize];
                            std::ptr::copy_nonoverlapping(
                                src.as_ptr(),
                                (self.cache + from as usize) as *mut u8,
                                src.len(),
                            );
                        }
                    }
                }
                if written.is_some() && *mark == CACHED {
                    *mark = WRITTEN;
                    self.written.push(page);
                }
            }
        }
    }
}

/// Tells the native stable accesses' injected functions the stable memory's size (as far as
/// the cache covers it): after every grow and when a message starts.
pub fn sync_native_size(mut ctx: impl wasmtime::AsContextMut<Data = HostState>) -> Result<()> {
    let data = ctx.as_context().data();
    let size = data.stable.image().size_bytes();
    let Some(bytes) = data.native_stable.as_ref().map(|n| n.bytes) else {
        return Ok(());
    };
    let visible = size.min(instrument::STABLE_CACHE_BYTES);
    bytes.set(&mut ctx, Val::I64(visible as i64))
}
