//! Stable memory: sparse, page-granular and copy-on-write.
//!
//! Pages are 4 KiB (the replica's tracking granularity on Linux) and shared between the live
//! state and snapshots by reference counts ([`page::SharedPage`]), so a snapshot of a 1,000,000-row canister costs one map
//! clone and untouched pages cost no host memory. Each message keeps an undo log of the
//! pages it writes, which is both the rollback on a trap and the replica's set of newly
//! dirtied pages (charged `DIRTY_PAGE_OVERHEAD` each). On a host with larger OS pages
//! ([`crate::cost::Host`]) the pages dirtied and accessed, and so the charges and
//! limits, are counted in the host's pages beside. It also counts the 64 KiB Wasm pages the
//! deterministic memory tracker maps, and charges: those a message writes, and those it
//! reads after touching them before (a first read of untouched pages is the host's).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::OS_PAGE;

/// Stable memory is addressed in 64 KiB Wasm pages by `stable64_size`/`stable64_grow`.
pub const WASM_PAGE: u64 = 65536;
const OS_PAGES_PER_WASM_PAGE: u64 = WASM_PAGE / OS_PAGE as u64;

mod page;

use page::{Page, SharedPage};

/// Page numbers are dense small integers: hashing them with SipHash is wasted work.
#[derive(Default)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;

/// Pages per chunk of a [`PageTable`]: 1 MiB of stable memory.
const CHUNK_PAGES: usize = 256;
type Chunk = [Option<SharedPage>; CHUNK_PAGES];

/// The stored pages by number: chunks of page pointers, each shared (`Arc`) until written.
/// A lookup is two indexed loads (a hash map of 500,000 pages, a 10,000,000-row
/// StableBTreeMap's, missed the cache on most of its probes); a snapshot clones one pointer
/// per chunk, and the first write to a chunk after it copies that chunk's 2 KiB of pointers.
#[derive(Clone, Default)]
struct PageTable {
    chunks: Vec<Option<Arc<Chunk>>>,
    stored: usize,
}

impl PageTable {
    fn split(page: u64) -> (usize, usize) {
        (
            (page / CHUNK_PAGES as u64) as usize,
            (page % CHUNK_PAGES as u64) as usize,
        )
    }

    #[inline]
    fn get(&self, page: u64) -> Option<&SharedPage> {
        let (chunk, slot) = Self::split(page);
        self.chunks.get(chunk)?.as_ref()?[slot].as_ref()
    }

    fn slot_mut(&mut self, page: u64) -> &mut Option<SharedPage> {
        let (chunk, slot) = Self::split(page);
        if self.chunks.len() <= chunk {
            self.chunks.resize(chunk + 1, None);
        }
        let chunk =
            self.chunks[chunk].get_or_insert_with(|| Arc::new(std::array::from_fn(|_| None)));
        &mut Arc::make_mut(chunk)[slot]
    }

    fn insert(&mut self, page: u64, value: SharedPage) {
        if self.slot_mut(page).replace(value).is_none() {
            self.stored += 1;
        }
    }

    fn remove(&mut self, page: u64) {
        if self.get(page).is_some() && self.slot_mut(page).take().is_some() {
            self.stored -= 1;
        }
    }

    /// The stored page `page`, created as zeros if absent (and whether it was).
    fn page_mut(&mut self, page: u64) -> (&mut SharedPage, bool) {
        let created = self.get(page).is_none();
        if created {
            self.stored += 1;
        }
        let entry = self.slot_mut(page).get_or_insert_with(SharedPage::zeroed);
        (entry, created)
    }

    /// Every stored page, in page order.
    fn iter(&self) -> impl Iterator<Item = (u64, &SharedPage)> {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk.iter().flat_map(move |chunk| {
                chunk
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, p)| p.as_ref().map(|p| ((c * CHUNK_PAGES + i) as u64, p)))
            })
        })
    }
}

/// A set of page numbers as a bitmap that remembers which words it set, so a message's set
/// is cleared (and reused) in the time it took to fill.
#[derive(Default)]
struct PageBits {
    words: Vec<u64>,
    used: Vec<u32>,
    len: u64,
}

impl PageBits {
    /// Adds `page`; true if it was not in the set.
    fn insert(&mut self, page: u64) -> bool {
        let (word, bit) = ((page / 64) as usize, page % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        let w = &mut self.words[word];
        if *w & (1 << bit) != 0 {
            return false;
        }
        if *w == 0 {
            self.used.push(word as u32);
        }
        *w |= 1 << bit;
        self.len += 1;
        true
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn contains(&self, page: u64) -> bool {
        self.words
            .get((page / 64) as usize)
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }

    fn clear(&mut self) {
        for &w in &self.used {
            self.words[w as usize] = 0;
        }
        self.used.clear();
        self.len = 0;
    }
}

/// The committed contents: what snapshots hold.
#[derive(Clone, Default)]
pub struct StableImage {
    pages: PageTable,
    size_wasm_pages: u64,
}

impl StableImage {
    pub fn size_wasm_pages(&self) -> u64 {
        self.size_wasm_pages
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_wasm_pages * WASM_PAGE
    }

    /// Pages that hold data (never-written pages read as zero and are not stored).
    pub fn stored_pages(&self) -> usize {
        self.pages.stored
    }

    /// An image holding `bytes` from offset 0 (canbench's stable memory file), rounded up
    /// to whole Wasm pages.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut image = Self {
            size_wasm_pages: (bytes.len() as u64).div_ceil(WASM_PAGE),
            ..Self::default()
        };
        for (i, chunk) in bytes.chunks(OS_PAGE).enumerate() {
            let mut page = [0u8; OS_PAGE];
            page[..chunk.len()].copy_from_slice(chunk);
            if page.iter().any(|&b| b != 0) {
                image.pages.insert(i as u64, SharedPage::copy_of(&page));
            }
        }
        image
    }

    fn with_size(size_wasm_pages: u64) -> Self {
        Self {
            size_wasm_pages,
            ..Self::default()
        }
    }

    /// An image of `size_wasm_pages` holding `pages` (numbered 4 KiB pages), copied on as
    /// many threads as the machine has: a cached default run's 78,513 pages took 0.35 s on
    /// one, most of it the kernel handing the allocator fresh memory.
    pub fn from_pages(size_wasm_pages: u64, pages: &[(u64, &[u8])]) -> anyhow::Result<Self> {
        let mut image = Self::with_size(size_wasm_pages);
        for &(n, _) in pages {
            image.check_page_number(n)?;
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per_thread = pages.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let copying: Vec<_> = pages
                .chunks(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .map(|&(n, bytes)| {
                                let page: &Page = bytes.try_into().map_err(|_| {
                                    anyhow::anyhow!("stable page {n} of {} bytes", bytes.len())
                                })?;
                                Ok((n, SharedPage::copy_of(page)))
                            })
                            .collect::<anyhow::Result<Vec<_>>>()
                    })
                })
                .collect();
            for copying in copying {
                let copy = copying
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                for (n, page) in copy {
                    image.pages.insert(n, page);
                }
            }
            anyhow::Ok(())
        })?;
        Ok(image)
    }

    /// An image of `size_wasm_pages` whose pages `numbers` lie one after another in `file`
    /// from byte `offset` (a multiple of the page), mapped from it, not copied: see
    /// [`SharedPage::mapped`]. The file must not change while the image or a copy of it
    /// lives (cache entries never do: a new one is renamed over the name).
    #[cfg(target_os = "linux")]
    pub fn in_file(
        size_wasm_pages: u64,
        numbers: &[u64],
        file: &std::fs::File,
        offset: u64,
    ) -> anyhow::Result<Self> {
        let mut image = Self::with_size(size_wasm_pages);
        image.map_pages(numbers, file, offset)?;
        Ok(image)
    }

    /// An image of `size_wasm_pages` whose pages of each run `(first, count)` lie in `file`
    /// where a raw stable memory has them (page `n` at byte `n * OS_PAGE`: a downloaded
    /// snapshot's `stable_memory.bin`), mapped as [`Self::in_file`] maps them.
    #[cfg(target_os = "linux")]
    pub fn in_raw_file(
        size_wasm_pages: u64,
        file: &std::fs::File,
        runs: &[(u64, u64)],
    ) -> anyhow::Result<Self> {
        let mut image = Self::with_size(size_wasm_pages);
        for &(first, count) in runs {
            let numbers: Vec<u64> = (first..first + count).collect();
            image.map_pages(&numbers, file, first * OS_PAGE as u64)?;
        }
        Ok(image)
    }

    #[cfg(target_os = "linux")]
    fn map_pages(
        &mut self,
        numbers: &[u64],
        file: &std::fs::File,
        offset: u64,
    ) -> anyhow::Result<()> {
        for &n in numbers {
            self.check_page_number(n)?;
        }
        let pages = SharedPage::mapped(file, offset, numbers.len())?;
        for (&n, page) in numbers.iter().zip(pages) {
            self.pages.insert(n, page);
        }
        Ok(())
    }

    fn check_page_number(&self, n: u64) -> anyhow::Result<()> {
        if n >= self.size_wasm_pages * OS_PAGES_PER_WASM_PAGE {
            anyhow::bail!(
                "stable page {n} is past the size of {} Wasm pages",
                self.size_wasm_pages
            );
        }
        Ok(())
    }

    /// The stored pages where `self` differs from `base`, in page order: `Some(bytes)` for
    /// a page `self` holds that `base` does not hold alike (a page both share, unwritten
    /// since, is not compared byte by byte), `None` for a page only `base` holds.
    pub fn changes_from<'a>(&'a self, base: &StableImage) -> Vec<(u64, Option<&'a [u8]>)> {
        let mut out = Vec::new();
        for (n, page) in self.pages.iter() {
            let same = base
                .pages
                .get(n)
                .is_some_and(|b| std::ptr::eq(&**b, &**page) || b[..] == page[..]);
            if !same {
                out.push((n, Some(&page[..])));
            }
        }
        for (n, _) in base.pages.iter() {
            if self.pages.get(n).is_none() {
                out.push((n, None));
            }
        }
        out.sort_by_key(|&(n, _)| n);
        out
    }

    /// `self` of `size_wasm_pages` with `changes` made: a page given bytes holds them, a
    /// page given `None` is no longer stored (reads as zero). The pages not named stay
    /// shared with `self`.
    pub fn with_changes(
        &self,
        size_wasm_pages: u64,
        changes: &[(u64, Option<&[u8]>)],
    ) -> anyhow::Result<Self> {
        let mut image = Self {
            size_wasm_pages,
            pages: self.pages.clone(),
        };
        for &(n, bytes) in changes {
            image.check_page_number(n)?;
            match bytes {
                Some(bytes) => {
                    let page: &Page = bytes
                        .try_into()
                        .map_err(|_| anyhow::anyhow!("stable page {n} of {} bytes", bytes.len()))?;
                    image.pages.insert(n, SharedPage::copy_of(page));
                }
                None => image.pages.remove(n),
            }
        }
        if let Some((n, _)) = image.pages.iter().last() {
            image.check_page_number(n)?;
        }
        Ok(image)
    }

    /// Feeds the contents (size and every non-zero page, in page order) to `f`, for
    /// state hashes.
    pub fn for_each_page(&self, mut f: impl FnMut(u64, &[u8])) {
        for (n, page) in self.pages.iter() {
            f(n, &page[..]);
        }
    }
}

/// Per-message bookkeeping.
#[derive(Default)]
struct MessageLog {
    /// The previous value of every page written in this message (None = was zero).
    undo: PageMap<Option<SharedPage>>,
    size_before: u64,
    accessed: PageBits,
    /// The last page touched and the last page written, both already recorded: canisters
    /// read and write small pieces of the same page many times in a row, and these skip the
    /// set lookups for them.
    last_accessed: Option<u64>,
    last_dirty: Option<u64>,
    /// Wasm pages accessed and written, counted only under the deterministic memory tracker.
    wasm_pages: Option<WasmPageLog>,
    /// The host's OS pages written and accessed, counted only where they are larger than
    /// the 4 KiB pages above (`StableMemory::os_shift`).
    os_dirty: PageBits,
    os_accessed: PageBits,
}

/// The Wasm pages a message touched, as the deterministic memory tracker counts them.
#[derive(Default)]
struct WasmPageLog {
    accessed: PagesInOrder,
    written: PagesInOrder,
}

impl WasmPageLog {
    #[inline]
    fn access(&mut self, pages: std::ops::Range<u64>) {
        self.accessed.note(pages)
    }

    #[inline]
    fn write(&mut self, pages: std::ops::Range<u64>) {
        self.accessed.note(pages.clone());
        self.written.note(pages)
    }

    fn clear(&mut self) {
        self.accessed.clear();
        self.written.clear();
    }
}

/// A set of Wasm pages that remembers the order they joined it in.
#[derive(Default)]
struct PagesInOrder {
    pages: PageBits,
    /// The pages in the order they were first noted (for the page map).
    order: Vec<u64>,
    /// The last page noted (see `MessageLog::last_accessed`).
    last: Option<u64>,
}

impl PagesInOrder {
    #[inline]
    fn note(&mut self, pages: std::ops::Range<u64>) {
        if pages.end == pages.start + 1 && self.last == Some(pages.start) {
            return;
        }
        self.note_new(pages)
    }

    fn note_new(&mut self, pages: std::ops::Range<u64>) {
        self.last = pages.clone().last().or(self.last);
        for p in pages {
            if self.pages.insert(p) {
                self.order.push(p);
            }
        }
    }

    fn clear(&mut self) {
        self.pages.clear();
        self.order.clear();
        self.last = None;
    }
}

impl MessageLog {
    /// Empties the log for the next message, keeping its sets' memory.
    fn reset(&mut self, size_before: u64, count_wasm_pages: bool) {
        self.undo.clear();
        self.size_before = size_before;
        self.accessed.clear();
        self.last_accessed = None;
        self.last_dirty = None;
        self.os_dirty.clear();
        self.os_accessed.clear();
        match (&mut self.wasm_pages, count_wasm_pages) {
            (Some(w), true) => w.clear(),
            (w, true) => *w = Some(WasmPageLog::default()),
            (w, false) => *w = None,
        }
    }
}

/// Why a stable memory access failed; each maps to a replica error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StableError {
    OutOfBounds,
    DirtyPageLimit(u64),
    AccessedPageLimit(u64),
}

#[derive(Default)]
pub struct StableMemory {
    image: StableImage,
    log: MessageLog,
    max_wasm_pages: u64,
    /// Limits in the host's OS pages.
    dirty_limit: u64,
    accessed_limit: u64,
    /// The host's OS page as a shift of the 4 KiB page (0: the same page).
    os_shift: u32,
}

impl StableMemory {
    pub fn new(image: StableImage, max_bytes: u64) -> Self {
        Self {
            image,
            max_wasm_pages: max_bytes / WASM_PAGE,
            ..Self::default()
        }
    }

    pub fn image(&self) -> &StableImage {
        &self.image
    }

    pub fn size_wasm_pages(&self) -> u64 {
        self.image.size_wasm_pages
    }

    /// Starts a message with its page limits (in OS pages); `count_wasm_pages` counts the
    /// Wasm pages it accesses and writes (the deterministic memory tracker).
    pub fn begin(&mut self, dirty_limit: u64, accessed_limit: u64, count_wasm_pages: bool) {
        self.log.reset(self.image.size_wasm_pages, count_wasm_pages);
        self.dirty_limit = dirty_limit;
        self.accessed_limit = accessed_limit;
    }

    /// Counts the messages from now on in OS pages of `1 << shift` 4 KiB pages (the host's,
    /// see [`crate::cost::Host::page_shift`]): the dirty pages charged, and the
    /// pages the limits of [`Self::begin`] count.
    pub fn set_os_page_shift(&mut self, shift: u32) {
        self.os_shift = shift;
    }

    /// 4 KiB pages written in the current message.
    pub fn dirty_pages(&self) -> u64 {
        self.log.undo.len() as u64
    }

    /// The host's OS pages written in the current message: what the replica charges
    /// before the memory tracker.
    pub fn dirty_os_pages(&self) -> u64 {
        match self.os_shift {
            0 => self.dirty_pages(),
            _ => self.log.os_dirty.len(),
        }
    }

    /// The host's OS pages accessed in the current message.
    fn accessed_os_pages(&self) -> u64 {
        match self.os_shift {
            0 => self.log.accessed.len(),
            _ => self.log.os_accessed.len(),
        }
    }

    /// The host's OS pages `pages` (4 KiB pages) lie in.
    fn os_pages(&self, pages: &std::ops::Range<u64>) -> std::ops::Range<u64> {
        match pages.is_empty() {
            true => 0..0,
            false => pages.start >> self.os_shift..((pages.end - 1) >> self.os_shift) + 1,
        }
    }

    /// Wasm pages accessed in the current message (0 unless counted, see [`Self::begin`]).
    pub fn wasm_pages_accessed(&self) -> u64 {
        self.log
            .wasm_pages
            .as_ref()
            .map_or(0, |w| w.accessed.pages.len())
    }

    /// Wasm pages written in the current message (0 unless counted).
    pub fn wasm_pages_written(&self) -> u64 {
        self.log
            .wasm_pages
            .as_ref()
            .map_or(0, |w| w.written.pages.len())
    }

    /// The Wasm pages accessed and written in the current message, each in the order of its
    /// first access (first write); empty unless counted.
    pub fn wasm_pages_in_order(&self) -> (Vec<u64>, Vec<u64>) {
        self.log
            .wasm_pages
            .as_ref()
            .map_or((Vec::new(), Vec::new()), |w| {
                (w.accessed.order.clone(), w.written.order.clone())
            })
    }

    /// Wasm pages accessed plus Wasm pages written in the current message (see
    /// [`super::heap::HeapRegion::wasm_pages_counted`]).
    #[inline]
    pub fn wasm_pages_counted(&self) -> u64 {
        self.log
            .wasm_pages
            .as_ref()
            .map_or(0, |w| w.accessed.pages.len() + w.written.pages.len())
    }

    pub fn commit(&mut self) {
        let size = self.image.size_wasm_pages;
        self.log.reset(size, false);
    }

    pub fn rollback(&mut self) {
        for (page, old) in self.log.undo.drain() {
            match old {
                Some(p) => self.image.pages.insert(page, p),
                None => self.image.pages.remove(page),
            };
        }
        self.image.size_wasm_pages = self.log.size_before;
        let size = self.image.size_wasm_pages;
        self.log.reset(size, false);
    }

    /// Grows by `delta` Wasm pages; returns the old size, or -1 past the maximum.
    pub fn grow(&mut self, delta: u64) -> i64 {
        let old = self.image.size_wasm_pages;
        match old.checked_add(delta) {
            Some(new) if new <= self.max_wasm_pages => {
                self.image.size_wasm_pages = new;
                old as i64
            }
            _ => -1,
        }
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<(), StableError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.image.size_bytes() => Ok(()),
            _ => Err(StableError::OutOfBounds),
        }
    }

    fn pages_of(offset: u64, len: u64) -> std::ops::Range<u64> {
        if len == 0 {
            return 0..0;
        }
        offset / OS_PAGE as u64..(offset + len - 1) / OS_PAGE as u64 + 1
    }

    fn wasm_pages_of(offset: u64, len: u64) -> std::ops::Range<u64> {
        if len == 0 {
            return 0..0;
        }
        offset / WASM_PAGE..(offset + len - 1) / WASM_PAGE + 1
    }

    #[inline]
    fn touch(&mut self, pages: std::ops::Range<u64>) -> Result<(), StableError> {
        if pages.end == pages.start + 1 && self.log.last_accessed == Some(pages.start) {
            return Ok(());
        }
        self.touch_new(pages)
    }

    fn touch_new(&mut self, pages: std::ops::Range<u64>) -> Result<(), StableError> {
        if let Some(last) = pages.clone().last() {
            self.log.last_accessed = Some(last);
        }
        if self.os_shift > 0 {
            for p in self.os_pages(&pages) {
                self.log.os_accessed.insert(p);
            }
        }
        for p in pages {
            self.log.accessed.insert(p);
        }
        if self.accessed_os_pages() > self.accessed_limit {
            return Err(StableError::AccessedPageLimit(self.accessed_limit));
        }
        Ok(())
    }

    /// Whether no OS page of `pages` (4 KiB pages) was read or written yet in this message.
    /// The replica answers such a read from the stable memory's page map on the host
    /// (`stable_read_first_access`), where the memory tracker does not see it: only a read
    /// of a page the message touched before, or a write, is a `memory.copy` of the mapped
    /// stable memory, which faults and is charged (see docs/engine.md, "Stable memory").
    #[inline]
    fn first_access(&self, pages: &std::ops::Range<u64>) -> bool {
        if pages.end == pages.start + 1 && self.log.last_accessed == Some(pages.start) {
            return false;
        }
        match self.os_shift {
            0 => !pages.clone().any(|p| self.log.accessed.contains(p)),
            _ => !self
                .os_pages(pages)
                .any(|p| self.log.os_accessed.contains(p)),
        }
    }

    pub fn read(&mut self, offset: u64, out: &mut [u8]) -> Result<(), StableError> {
        self.read_after(offset, out, || {})
    }

    /// [`Self::read`], calling `before_copy` once the read is known to succeed, before `out`
    /// is written.
    #[inline]
    pub fn read_after(
        &mut self,
        offset: u64,
        out: &mut [u8],
        before_copy: impl FnOnce(),
    ) -> Result<(), StableError> {
        let len = out.len() as u64;
        self.check_range(offset, len)?;
        let pages = Self::pages_of(offset, len);
        // Only the memory tracker asks, and before `touch` marks the pages.
        let tracked = self.log.wasm_pages.is_some() && !self.first_access(&pages);
        self.touch(pages)?;
        if let (Some(w), true) = (&mut self.log.wasm_pages, tracked) {
            w.access(Self::wasm_pages_of(offset, len));
        }
        before_copy();
        let in_page = (offset % OS_PAGE as u64) as usize;
        if in_page + out.len() <= OS_PAGE {
            // Within one page, as most of a StableBTreeMap's reads are: no iterator (a
            // tenth of such a read's cost).
            match self.image.pages.get(offset / OS_PAGE as u64) {
                Some(p) => out.copy_from_slice(&p[in_page..in_page + out.len()]),
                None => out.fill(0),
            }
            return Ok(());
        }
        for (page, in_page, r) in pieces(offset, out.len()) {
            match self.image.pages.get(page) {
                Some(p) => out[r.clone()].copy_from_slice(&p[in_page..in_page + r.len()]),
                None => out[r].fill(0),
            }
        }
        Ok(())
    }

    /// Writes `data`; returns how many of the host's OS pages this write dirtied for the
    /// first time in the current message (the replica charges each).
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<u64, StableError> {
        let len = data.len() as u64;
        self.check_range(offset, len)?;
        let pages = Self::pages_of(offset, len);
        let last_dirty = self.log.last_dirty;
        let newly_dirty = match self.os_shift {
            0 => pages
                .clone()
                .filter(|&p| Some(p) != last_dirty && !self.log.undo.contains_key(&p))
                .count() as u64,
            _ => self
                .os_pages(&pages)
                .filter(|&p| !self.log.os_dirty.contains(p))
                .count() as u64,
        };
        if self.dirty_os_pages() + newly_dirty > self.dirty_limit {
            return Err(StableError::DirtyPageLimit(self.dirty_limit));
        }
        self.touch(pages.clone())?;
        if self.os_shift > 0 {
            for p in self.os_pages(&pages) {
                self.log.os_dirty.insert(p);
            }
        }
        if let Some(w) = &mut self.log.wasm_pages {
            w.write(Self::wasm_pages_of(offset, len));
        }
        for (page, in_page, r) in pieces(offset, data.len()) {
            let (entry, created) = self.image.pages.page_mut(page);
            if Some(page) != last_dirty {
                if let std::collections::hash_map::Entry::Vacant(undo) = self.log.undo.entry(page) {
                    // First write of this page in the message: remember what to roll back
                    // to. A page that did not exist was just created as zeros above.
                    let was_zero = created || (entry.is_unique() && entry.iter().all(|&b| b == 0));
                    undo.insert(if was_zero { None } else { Some(entry.clone()) });
                }
            }
            // Copy-on-write: clones the page only if a snapshot or the undo log shares it.
            SharedPage::make_mut(entry)[in_page..in_page + r.len()].copy_from_slice(&data[r]);
        }
        if let Some(last) = pages.last() {
            self.log.last_dirty = Some(last);
        }
        Ok(newly_dirty)
    }

    /// Puts `bytes` (a whole 4 KiB page) into page `page`, which the current message has
    /// written already: the native stable writes' write-back, which changes no count.
    pub fn write_back(&mut self, page: u64, bytes: &[u8]) {
        debug_assert!(self.log.undo.contains_key(&page), "page {page} not written");
        let (entry, _) = self.image.pages.page_mut(page);
        SharedPage::make_mut(entry).copy_from_slice(bytes);
    }

    /// The stored bytes of 4 KiB page `page` (`None`: zeros).
    pub fn page_bytes(&self, page: u64) -> Option<&[u8]> {
        self.image.pages.get(page).map(|p| &p[..])
    }

    pub fn os_pages_per_wasm_page() -> u64 {
        OS_PAGES_PER_WASM_PAGE
    }
}

/// Splits `len` bytes at `offset` into per-page pieces: (page, offset in the page, range
/// of the caller's buffer).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, std::ops::Range<usize>)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let pos = offset + done as u64;
        let in_page = (pos % OS_PAGE as u64) as usize;
        let n = (OS_PAGE - in_page).min(len - done);
        let piece = (pos / OS_PAGE as u64, in_page, done..done + n);
        done += n;
        Some(piece)
    })
}

#[cfg(test)]
mod tests;
