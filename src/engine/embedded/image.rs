//! A saved copy of a canister heap whose never-written pages cost no host memory.
//!
//! The committed heap (the rollback source) and every snapshot hold one. A `Vec<u8>` would
//! make a heap grown to 4 GiB cost 4 GiB of host memory per copy even when the canister
//! touched one page of it. [`HeapImage`] instead keeps the bytes in an anonymous reservation
//! of the largest heap, where untouched pages read as zero and take no memory, and records
//! which OS pages were ever written, so cloning and restoring copy only those.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, bail, Result};

use super::heap::{page_range, protect, reserve, MAX_WASM64_HEAP_BYTES, OS_PAGE};

pub struct HeapImage {
    /// Start of the reservation; null while nothing was ever reserved (`len` is 0).
    base: *mut u8,
    len: usize,
    /// One bit per OS page ever written since the image was (re)sized from zero. Every
    /// byte outside these pages is zero, and every byte past `len` too.
    written: Vec<u64>,
    /// The [`FrozenHeap`] this image is a copy-on-write view of (its `id`), 0 if none.
    view_of: u64,
}

// SAFETY: the image owns its mapping; shared access is read-only and writes need `&mut`.
unsafe impl Send for HeapImage {}
unsafe impl Sync for HeapImage {}

impl Default for HeapImage {
    fn default() -> Self {
        Self {
            base: std::ptr::null_mut(),
            len: 0,
            written: Vec::new(),
            view_of: 0,
        }
    }
}

impl HeapImage {
    /// An image of `bytes` (a live heap): only pages with a nonzero byte are copied.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut image = Self::default();
        image.set_len(bytes.len())?;
        for (page, chunk) in bytes.chunks(OS_PAGE).enumerate() {
            if chunk.iter().any(|&b| b != 0) {
                image.write_page(page as u32, chunk);
            }
        }
        Ok(image)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.base.is_null() {
            return &[];
        }
        // SAFETY: `len` bytes of the reservation are readable (unwritten pages read as 0).
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.base.is_null() {
            return &mut [];
        }
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }

    /// The pages ever written, in order: every other page of the image is zero.
    pub fn written_pages(&self) -> impl Iterator<Item = u32> + '_ {
        self.written.iter().enumerate().flat_map(|(word, &bits)| {
            (0..64)
                .filter(move |bit| bits & (1 << bit) != 0)
                .map(move |bit| (word * 64 + bit) as u32)
        })
    }

    fn is_written(&self, page: u32) -> bool {
        let (word, bit) = (page as usize / 64, page % 64);
        self.written.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// One OS page of the image.
    pub fn page(&self, page: u32) -> &[u8] {
        &self.as_slice()[page_range(page)]
    }

    /// Copies `bytes` (one OS page) into `page`.
    pub fn write_page(&mut self, page: u32, bytes: &[u8]) {
        self.as_mut_slice()[page_range(page)].copy_from_slice(bytes);
        self.mark_written(page);
    }

    fn mark_written(&mut self, page: u32) {
        let (word, bit) = (page as usize / 64, page % 64);
        if self.written.len() <= word {
            self.written.resize(word + 1, 0);
        }
        self.written[word] |= 1 << bit;
    }

    /// Grows (new bytes are zero) or shrinks (the cut pages are released) the image.
    pub fn set_len(&mut self, len: usize) -> Result<()> {
        if len > MAX_WASM64_HEAP_BYTES || !len.is_multiple_of(OS_PAGE) {
            bail!(
                "a heap image of {len} bytes is not a whole number of pages up to the largest heap"
            );
        }
        if len != self.len {
            // Only a view of exactly the frozen heap's length is reverted by dropping pages.
            self.view_of = 0;
        }
        if self.base.is_null() && len > 0 {
            // Inaccessible until used: with strict overcommit only the part made
            // accessible (the image's length) counts against the commit limit.
            self.base = reserve(MAX_WASM64_HEAP_BYTES)
                .map_err(|e| anyhow!("cannot reserve memory for a heap copy: {e}"))?;
        }
        if len > self.len {
            self.protect(self.len..len, libc::PROT_READ | libc::PROT_WRITE)?;
        } else if len < self.len {
            self.release(len..self.len)?;
            let first_cut = (len / OS_PAGE) as u32;
            let cut: Vec<u32> = self.written_pages().filter(|&p| p >= first_cut).collect();
            for p in cut {
                self.written[p as usize / 64] &= !(1 << (p % 64));
            }
        }
        self.len = len;
        Ok(())
    }

    fn protect(&mut self, range: Range<usize>, prot: libc::c_int) -> Result<()> {
        // SAFETY: the range lies inside our own reservation.
        protect(unsafe { self.base.add(range.start) }, range.len(), prot)
            .map_err(|e| anyhow!("heap copy: {e}"))
    }

    /// Gives the pages of `range` back to the OS (they read as zero when used again) and
    /// makes them inaccessible. A fresh anonymous mapping replaces them, not
    /// `MADV_DONTNEED`: on a copy-on-write view of a frozen heap that would bring back the
    /// frozen bytes instead of zeros.
    fn release(&mut self, range: Range<usize>) -> Result<()> {
        // SAFETY: the range lies inside our own reservation.
        unsafe {
            map_fixed(
                self.base.add(range.start),
                range.len(),
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            )
        }
        .map_err(|e| anyhow!("releasing heap copy pages failed: {e}"))
    }

    /// Makes `live` (a heap of the image's length) equal to the image, writing only pages
    /// that differ from what an untouched heap holds: the image's written pages, and pages
    /// of `live` that are nonzero where the image is zero (a fresh instance's data
    /// segments). `live` is known to be zero from byte `zero_from` on (a fresh grow).
    pub fn restore_into(&self, live: &mut [u8], zero_from: usize) -> Result<()> {
        if live.len() != self.len {
            bail!(
                "cannot restore a {}-byte heap into a {}-byte memory",
                self.len,
                live.len()
            );
        }
        for (page, chunk) in live.chunks_mut(OS_PAGE).enumerate() {
            let page = page as u32;
            if self.is_written(page) {
                chunk.copy_from_slice(self.page(page));
            } else if (page as usize) * OS_PAGE < zero_from && chunk.iter().any(|&b| b != 0) {
                chunk.fill(0);
            }
        }
        Ok(())
    }

    /// Heap-sized images are cloned page by page: only written pages are copied.
    pub fn try_clone(&self) -> Result<Self> {
        let mut copy = Self::default();
        copy.set_len(self.len)?;
        for page in self.written_pages() {
            copy.write_page(page, self.page(page));
        }
        Ok(copy)
    }
}

/// A heap image that never changes again: the heap of a saved state (a snapshot). On Linux
/// its bytes live in a memfd, and every engine that loads the state maps that file
/// copy-on-write as its committed image ([`FrozenHeap::thaw`]) and as its live heap
/// ([`FrozenHeap::map_into`]), so a fork of the engine pays only for the pages it writes
/// instead of two copies of the whole heap. Elsewhere it is a plain copy.
pub struct FrozenHeap {
    /// The bytes, read-only: on Linux a shared mapping of `file`.
    image: HeapImage,
    /// Unique per frozen file (0: no file), to recognise the views mapped from it.
    id: u64,
    /// None for an empty heap (nothing to map).
    #[cfg(target_os = "linux")]
    file: Option<std::os::fd::OwnedFd>,
    /// A frozen heap kept as another one plus the pages that differ (see
    /// [`FrozenHeap::layered`]); `image` is then empty.
    layer: Option<Layer>,
}

/// The pages of a layered [`FrozenHeap`] that differ from its base, which is never itself
/// layered.
struct Layer {
    base: std::sync::Arc<FrozenHeap>,
    pages: std::collections::BTreeMap<u32, Box<[u8]>>,
}

impl HeapImage {
    /// The image's bytes as a [`FrozenHeap`]: one copy of its written pages.
    #[cfg(target_os = "linux")]
    pub fn freeze(&self) -> Result<FrozenHeap> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        if self.len == 0 {
            return Ok(FrozenHeap {
                image: HeapImage::default(),
                id: 0,
                file: None,
                layer: None,
            });
        }
        // SAFETY: a plain syscall with a NUL-terminated name.
        let fd = unsafe { libc::memfd_create(c"icbench-heap".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            bail!(
                "cannot create a memfd for a heap snapshot: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a plain syscall on our own file.
        if unsafe { libc::ftruncate(file.as_raw_fd(), self.len as libc::off_t) } != 0 {
            bail!(
                "cannot size a {}-byte heap snapshot: {}",
                self.len,
                std::io::Error::last_os_error()
            );
        }
        let mut image = HeapImage::default();
        image.set_len(self.len)?;
        // SAFETY: the first `len` bytes of the fresh reservation become the shared file.
        unsafe {
            map_fixed(
                image.base,
                self.len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
            )?
        };
        for page in self.written_pages() {
            image.write_page(page, self.page(page));
        }
        // Read-only from now on: a stray write would change every fork's heap.
        image.protect(0..self.len, libc::PROT_READ)?;
        // The bytes stay in the file; this mapping lets go of them, so that the process's
        // resident memory does not count them once for this mapping and again for every
        // view that maps them (a 10,000,000-row heap map's snapshot is 1.5 GB). A later read
        // maps them again from the file, copying nothing.
        // SAFETY: a shared mapping of our own file: dropping its page table entries keeps
        // the file's contents.
        if unsafe { libc::madvise(image.base.cast(), self.len, libc::MADV_DONTNEED) } != 0 {
            bail!(
                "releasing a heap snapshot's mapping failed: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(FrozenHeap {
            image,
            id: NEXT_FROZEN_ID.fetch_add(1, Ordering::Relaxed),
            file: Some(file),
            layer: None,
        })
    }

    /// The image's bytes as a [`FrozenHeap`]: a copy of its written pages.
    #[cfg(not(target_os = "linux"))]
    pub fn freeze(&self) -> Result<FrozenHeap> {
        Ok(FrozenHeap {
            image: self.try_clone()?,
            id: 0,
            layer: None,
        })
    }
}

impl FrozenHeap {
    /// `image` (a heap equal to `parent` but for the pages `changed`) frozen as `parent`
    /// plus copies of those pages, instead of a copy of the whole heap: a snapshot taken
    /// after a few messages on a restored state (SQLite's journal mode set on a
    /// 10,000,000-row canister) costs the pages they wrote. A layered parent's base is
    /// taken with its pages, so layers never stack.
    pub fn layered(
        parent: &std::sync::Arc<FrozenHeap>,
        image: &HeapImage,
        changed: impl Iterator<Item = u32>,
    ) -> Result<FrozenHeap> {
        if image.len() != parent.len() {
            bail!(
                "a {}-byte heap cannot be kept as changes to a {}-byte one",
                image.len(),
                parent.len()
            );
        }
        let (base, mut pages) = match &parent.layer {
            Some(l) => (
                l.base.clone(),
                l.pages
                    .keys()
                    .copied()
                    .collect::<std::collections::BTreeSet<u32>>(),
            ),
            None => (parent.clone(), Default::default()),
        };
        pages.extend(changed);
        Ok(FrozenHeap {
            image: HeapImage::default(),
            id: NEXT_FROZEN_ID.fetch_add(1, Ordering::Relaxed),
            #[cfg(target_os = "linux")]
            file: None,
            layer: Some(Layer {
                base,
                pages: pages
                    .into_iter()
                    .map(|p| (p, image.page(p).to_vec().into_boxed_slice()))
                    .collect(),
            }),
        })
    }

    /// How many pages a layered heap keeps of its own (0 for a whole one).
    pub fn layer_pages(&self) -> usize {
        self.layer.as_ref().map_or(0, |l| l.pages.len())
    }

    pub fn len(&self) -> usize {
        match &self.layer {
            Some(l) => l.base.len(),
            None => self.image.len(),
        }
    }

    pub fn page(&self, page: u32) -> &[u8] {
        match &self.layer {
            Some(l) => match l.pages.get(&page) {
                Some(bytes) => bytes,
                None => l.base.page(page),
            },
            None => self.image.page(page),
        }
    }

    pub fn written_pages(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match &self.layer {
            Some(l) => {
                let mut all: std::collections::BTreeSet<u32> = l.base.written_pages().collect();
                all.extend(l.pages.keys().copied());
                Box::new(all.into_iter())
            }
            None => Box::new(self.image.written_pages()),
        }
    }

    /// A layer's own pages among `pages` (sorted) written into a view of its base.
    fn rewrite_layer(&self, pages: &[u32], mut write: impl FnMut(u32, &[u8])) {
        if let Some(l) = &self.layer {
            for p in pages {
                if let Some(bytes) = l.pages.get(p) {
                    write(*p, bytes);
                }
            }
        }
    }

    /// A changeable image with the same bytes: on Linux a private (copy-on-write) mapping
    /// of the frozen file, costing memory only for the pages written to it later.
    pub fn thaw(&self) -> Result<HeapImage> {
        if let Some(l) = &self.layer {
            let mut copy = l.base.thaw()?;
            for (&p, bytes) in &l.pages {
                copy.write_page(p, bytes);
            }
            if copy.view_of != 0 {
                copy.view_of = self.id;
            }
            return Ok(copy);
        }
        #[cfg(target_os = "linux")]
        if let Some(file) = &self.file {
            use std::os::fd::AsRawFd;
            let mut copy = HeapImage::default();
            copy.set_len(self.len())?;
            // SAFETY: the first `len` bytes of the fresh reservation become the view; the
            // file is `len` bytes long.
            unsafe {
                map_fixed(
                    copy.base,
                    self.len(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                )?
            };
            copy.written = self.image.written.clone();
            copy.view_of = self.id;
            return Ok(copy);
        }
        self.image.try_clone()
    }

    /// Makes `live` (a heap of the image's length) equal to the image; `live` is known to
    /// be zero from byte `zero_from` on. On Linux the heap's pages are replaced by a
    /// private mapping of the frozen file: nothing is copied until the canister writes.
    /// Returns what [`FrozenHeap::revert_live`] needs to know: the id of the heap `live`
    /// is now a view of, or 0 if it got a copy.
    ///
    /// # Safety
    /// `live` must be the accessible part of a heap mapping this engine owns (a
    /// [`super::heap::HeapRegion`] not armed for tracking), and no Wasm may run meanwhile.
    pub unsafe fn map_into(&self, live: &mut [u8], zero_from: usize) -> Result<u64> {
        if let Some(l) = &self.layer {
            // SAFETY: the caller's contract, passed on.
            let view = unsafe { l.base.map_into(live, zero_from)? };
            for (&p, bytes) in &l.pages {
                live[page_range(p)].copy_from_slice(bytes);
            }
            return Ok(if view != 0 { self.id } else { 0 });
        }
        #[cfg(target_os = "linux")]
        if let Some(file) = &self.file {
            use std::os::fd::AsRawFd;
            if live.len() != self.len() {
                bail!(
                    "cannot restore a {}-byte heap into a {}-byte memory",
                    self.len(),
                    live.len()
                );
            }
            if !(live.as_ptr() as usize).is_multiple_of(OS_PAGE) {
                bail!("a heap that does not start on a page boundary cannot be mapped");
            }
            // SAFETY: the caller hands us the heap's own mapping, `len` bytes of it.
            unsafe {
                map_fixed(
                    live.as_mut_ptr(),
                    self.len(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                )?
            };
            return Ok(self.id);
        }
        self.image.restore_into(live, zero_from)?;
        Ok(0)
    }

    /// Gives `pages` (sorted) of `image` their frozen bytes again. A view of this heap drops
    /// its own copies of them, which makes them the file's shared pages again (a fork's
    /// memory stays what one scenario writes, not all scenarios together); any other
    /// image gets them copied.
    pub fn revert_image(&self, image: &mut HeapImage, pages: &[u32]) -> Result<()> {
        if self.id != 0 && image.view_of == self.id && image.len == self.len() {
            // SAFETY: the image is a private view of our file (a layer's: of its base's),
            // `len` bytes long.
            unsafe { drop_private(image.base, self.len(), pages)? };
            for &p in pages {
                image.mark_written(p);
            }
            // Dropped pages read the base's bytes: a layer's own ones are written again.
            self.rewrite_layer(pages, |p, bytes| image.write_page(p, bytes));
            return Ok(());
        }
        for &p in pages {
            image.write_page(p, self.page(p));
        }
        Ok(())
    }

    /// [`FrozenHeap::revert_image`] for a live heap; `view` is what
    /// [`FrozenHeap::map_into`] returned for it.
    ///
    /// # Safety
    /// As for `map_into`: `live` is the heap's own mapping, and `view` is what `map_into`
    /// returned for it, with the heap not grown since.
    pub unsafe fn revert_live(&self, live: &mut [u8], view: u64, pages: &[u32]) -> Result<()> {
        if self.id != 0 && view == self.id && live.len() == self.len() {
            // SAFETY: the caller's contract: a private view of our file (a layer's: of its
            // base's), `len` bytes long.
            unsafe { drop_private(live.as_mut_ptr(), self.len(), pages)? };
            self.rewrite_layer(pages, |p, bytes| live[page_range(p)].copy_from_slice(bytes));
            return Ok(());
        }
        for &p in pages {
            live[page_range(p)].copy_from_slice(self.page(p));
        }
        Ok(())
    }
}

/// Drops the private copies of `pages` (sorted) of a private file mapping at `base`, one
/// `madvise` per run of consecutive pages: they read the file's bytes again.
///
/// # Safety
/// `base..base + len` must be a private mapping of a file this module owns.
unsafe fn drop_private(base: *mut u8, len: usize, pages: &[u32]) -> Result<()> {
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

/// The next [`FrozenHeap::id`].
static NEXT_FROZEN_ID: AtomicU64 = AtomicU64::new(1);

/// Maps `len` bytes at `addr` (replacing what was there), never reserving swap for them.
///
/// # Safety
/// `addr..addr + len` must lie in a mapping this module owns, and nothing may hold
/// references into it that expect the old contents.
unsafe fn map_fixed(
    addr: *mut u8,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    fd: libc::c_int,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: see the function's contract.
    let got = unsafe {
        libc::mmap(
            addr.cast(),
            len,
            prot,
            flags | libc::MAP_FIXED | libc::MAP_NORESERVE,
            fd,
            0,
        )
    };
    if got == libc::MAP_FAILED {
        bail!(
            "mapping {len} heap bytes failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

impl Drop for HeapImage {
    fn drop(&mut self) {
        if !self.base.is_null() {
            // SAFETY: unmapping our own reservation; no slice of it outlives `self`.
            unsafe { libc::munmap(self.base.cast(), MAX_WASM64_HEAP_BYTES) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;

    /// Resident pages of the image's first `len` bytes, as the kernel reports them.
    fn resident_pages(image: &HeapImage) -> usize {
        let pages = image.len() / OS_PAGE;
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is our mapping; `vec` has one byte per page.
        let rc = unsafe { libc::mincore(image.base.cast(), image.len(), vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        vec.iter().filter(|&&v| v & 1 != 0).count()
    }

    #[test]
    fn a_large_image_costs_only_its_written_pages() {
        let mut image = HeapImage::default();
        image.set_len(4 * GIB).unwrap();
        image.write_page(12_345, &[7u8; OS_PAGE]);
        assert_eq!(resident_pages(&image), 1);
        let copy = image.try_clone().unwrap();
        assert_eq!(resident_pages(&copy), 1);
        assert_eq!(copy.len(), 4 * GIB);
        assert_eq!(copy.page(12_345), &[7u8; OS_PAGE][..]);
        assert_eq!(copy.written_pages().collect::<Vec<_>>(), vec![12_345]);
    }

    #[test]
    fn shrinking_zeroes_the_cut_pages_for_a_later_grow() {
        let mut image = HeapImage::default();
        image.set_len(8 * OS_PAGE).unwrap();
        image.write_page(1, &[1u8; OS_PAGE]);
        image.write_page(6, &[6u8; OS_PAGE]);
        image.set_len(4 * OS_PAGE).unwrap();
        assert_eq!(image.written_pages().collect::<Vec<_>>(), vec![1]);
        image.set_len(8 * OS_PAGE).unwrap();
        assert!(image.as_slice()[4 * OS_PAGE..].iter().all(|&b| b == 0));
        assert_eq!(image.page(1), &[1u8; OS_PAGE][..]);
    }

    #[test]
    fn from_bytes_and_restore_into_round_trip() {
        let mut live = vec![0u8; 6 * OS_PAGE];
        live[2 * OS_PAGE + 5] = 9;
        let image = HeapImage::from_bytes(&live).unwrap();
        assert_eq!(image.written_pages().collect::<Vec<_>>(), vec![2]);
        assert_eq!(image.as_slice(), &live[..]);

        // A "fresh instance" with other data where the image is zero gets it cleared.
        let mut other = vec![0u8; 6 * OS_PAGE];
        other[4 * OS_PAGE] = 1;
        let len = other.len();
        image.restore_into(&mut other, len).unwrap();
        assert_eq!(other, live);
        assert!(image.restore_into(&mut [0u8; OS_PAGE], 0).is_err());
    }

    /// Anonymous (private, written) kB of the mapping that starts at `addr`, from smaps:
    /// what a copy-on-write view of a frozen heap costs on its own.
    #[cfg(target_os = "linux")]
    fn private_kb(addr: *const u8) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{:x}-", addr as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "no mapping at {head}");
        let line = lines.find(|l| l.starts_with("Anonymous:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn a_frozen_heap_is_shared_and_each_view_pays_for_its_writes() {
        let mut image = HeapImage::default();
        image.set_len(64 * OS_PAGE).unwrap();
        image.write_page(3, &[3u8; OS_PAGE]);
        image.write_page(40, &[40u8; OS_PAGE]);
        let frozen = image.freeze().unwrap();
        drop(image);
        assert_eq!(frozen.len(), 64 * OS_PAGE);
        assert_eq!(frozen.written_pages().collect::<Vec<_>>(), vec![3, 40]);
        assert_eq!(frozen.page(40), &[40u8; OS_PAGE][..]);

        let mut a = frozen.thaw().unwrap();
        let b = frozen.thaw().unwrap();
        assert_eq!(a.written_pages().collect::<Vec<_>>(), vec![3, 40]);
        a.write_page(3, &[9u8; OS_PAGE]);
        a.write_page(5, &[5u8; OS_PAGE]);
        // The other view and the frozen heap still hold the frozen bytes.
        assert_eq!(b.page(3), &[3u8; OS_PAGE][..]);
        assert_eq!(frozen.page(3), &[3u8; OS_PAGE][..]);
        assert_eq!(frozen.page(5), &[0u8; OS_PAGE][..]);
        assert_eq!(a.page(3), &[9u8; OS_PAGE][..]);
        assert_eq!(a.page(40), &[40u8; OS_PAGE][..]);
        assert_eq!(a.written_pages().collect::<Vec<_>>(), vec![3, 5, 40]);
        #[cfg(target_os = "linux")]
        {
            // Only the two pages written through `a` are its own; `b` has none.
            assert_eq!(private_kb(a.base), 2 * OS_PAGE / 1024);
            assert_eq!(private_kb(b.base), 0);
        }

        // A live heap (an mmap of our own, here with other bytes in it) takes the view.
        let live_base = reserve(64 * OS_PAGE).unwrap();
        protect(live_base, 64 * OS_PAGE, libc::PROT_READ | libc::PROT_WRITE).unwrap();
        // SAFETY: the mapping above, accessible, used only here.
        let live = unsafe { std::slice::from_raw_parts_mut(live_base, 64 * OS_PAGE) };
        live[7 * OS_PAGE] = 1;
        // SAFETY: our own mapping, nothing else uses it.
        unsafe { frozen.map_into(live, 64 * OS_PAGE).unwrap() };
        assert_eq!(&live[..], b.as_slice());
        live[0] = 2;
        assert_eq!(frozen.page(0)[0], 0);
        // SAFETY: unmapping the test's own mapping.
        unsafe { libc::munmap(live_base.cast(), 64 * OS_PAGE) };
    }

    #[test]
    fn a_layered_heap_has_its_parents_bytes_but_its_own_pages_everywhere() {
        let mut image = HeapImage::default();
        image.set_len(16 * OS_PAGE).unwrap();
        image.write_page(2, &[2u8; OS_PAGE]);
        image.write_page(9, &[9u8; OS_PAGE]);
        let base = std::sync::Arc::new(image.freeze().unwrap());
        // The committed image of a canister loaded from `base`, then a message wrote 9 and 12.
        let mut committed = base.thaw().unwrap();
        committed.write_page(9, &[90u8; OS_PAGE]);
        committed.write_page(12, &[12u8; OS_PAGE]);
        let one = std::sync::Arc::new(
            FrozenHeap::layered(&base, &committed, [9, 12].into_iter()).unwrap(),
        );
        assert_eq!(one.layer_pages(), 2);
        assert_eq!(one.len(), 16 * OS_PAGE);
        assert_eq!(one.written_pages().collect::<Vec<_>>(), vec![2, 9, 12]);
        assert_eq!(one.page(2), &[2u8; OS_PAGE][..]);
        assert_eq!(one.page(9), &[90u8; OS_PAGE][..]);
        assert_eq!(base.page(9), &[9u8; OS_PAGE][..], "the parent is unchanged");
        // A layer on a layer keeps the first one's pages and never stacks.
        let mut again = one.thaw().unwrap();
        assert_eq!(again.as_slice(), committed.as_slice());
        again.write_page(2, &[20u8; OS_PAGE]);
        let two = FrozenHeap::layered(&one, &again, [2].into_iter()).unwrap();
        assert_eq!(two.layer_pages(), 3);
        assert_eq!(two.page(2), &[20u8; OS_PAGE][..]);
        assert_eq!(two.page(12), &[12u8; OS_PAGE][..]);
        assert!(two.layer.as_ref().unwrap().base.layer.is_none());

        // A view of the layer reverts to the layer's bytes, not the parent's.
        let mut view = one.thaw().unwrap();
        view.write_page(9, &[1u8; OS_PAGE]);
        view.write_page(2, &[1u8; OS_PAGE]);
        one.revert_image(&mut view, &[2, 9]).unwrap();
        assert_eq!(view.as_slice(), committed.as_slice());

        // A live heap takes the layer as a view and reverts the same way.
        let live_base = reserve(16 * OS_PAGE).unwrap();
        protect(live_base, 16 * OS_PAGE, libc::PROT_READ | libc::PROT_WRITE).unwrap();
        // SAFETY: the mapping above, accessible, used only here.
        let live = unsafe { std::slice::from_raw_parts_mut(live_base, 16 * OS_PAGE) };
        // SAFETY: our own mapping, nothing else uses it.
        let id = unsafe { one.map_into(live, 16 * OS_PAGE).unwrap() };
        assert_eq!(&live[..], committed.as_slice());
        live[9 * OS_PAGE..10 * OS_PAGE].fill(3);
        live[12 * OS_PAGE] = 3;
        // SAFETY: as above; `id` is what map_into returned for it.
        unsafe { one.revert_live(live, id, &[9, 12]).unwrap() };
        assert_eq!(&live[..], committed.as_slice());
        // SAFETY: unmapping the test's own mapping.
        unsafe { libc::munmap(live_base.cast(), 16 * OS_PAGE) };

        // A heap of another length is not a layer of it.
        let mut longer = HeapImage::default();
        longer.set_len(32 * OS_PAGE).unwrap();
        assert!(FrozenHeap::layered(&base, &longer, [1].into_iter()).is_err());
    }

    #[test]
    fn reverting_a_view_drops_its_copies_and_any_other_heap_gets_the_bytes() {
        let mut image = HeapImage::default();
        image.set_len(16 * OS_PAGE).unwrap();
        image.write_page(3, &[3u8; OS_PAGE]);
        let frozen = image.freeze().unwrap();

        let mut view = frozen.thaw().unwrap();
        view.write_page(3, &[9u8; OS_PAGE]);
        view.write_page(4, &[4u8; OS_PAGE]);
        view.write_page(10, &[10u8; OS_PAGE]);
        frozen.revert_image(&mut view, &[3, 4, 10]).unwrap();
        assert_eq!(view.as_slice(), frozen.image.as_slice());
        #[cfg(target_os = "linux")]
        assert_eq!(private_kb(view.base), 0);

        // Not a view of `frozen` (a copy, or a view whose length changed): bytes copied.
        let mut copy = view.try_clone().unwrap();
        copy.write_page(3, &[1u8; OS_PAGE]);
        frozen.revert_image(&mut copy, &[3]).unwrap();
        assert_eq!(copy.page(3), &[3u8; OS_PAGE][..]);

        let live_base = reserve(16 * OS_PAGE).unwrap();
        protect(live_base, 16 * OS_PAGE, libc::PROT_READ | libc::PROT_WRITE).unwrap();
        // SAFETY: the mapping above, accessible, used only here.
        let live = unsafe { std::slice::from_raw_parts_mut(live_base, 16 * OS_PAGE) };
        // SAFETY: our own mapping, nothing else uses it.
        let id = unsafe { frozen.map_into(live, 16 * OS_PAGE).unwrap() };
        live[3 * OS_PAGE] = 7;
        live[11 * OS_PAGE] = 7;
        // SAFETY: as above; `id` is what map_into returned.
        unsafe { frozen.revert_live(live, id, &[3, 11]).unwrap() };
        assert_eq!(&live[..], frozen.image.as_slice());
        #[cfg(target_os = "linux")]
        {
            assert_ne!(id, 0);
            assert_eq!(private_kb(live_base), 0);
        }
        // A heap that is not this view (id 0: a copy) is written, never dropped to zero.
        live[3 * OS_PAGE] = 7;
        // SAFETY: as above.
        unsafe { frozen.revert_live(live, 0, &[3]).unwrap() };
        assert_eq!(&live[..], frozen.image.as_slice());
        // SAFETY: unmapping the test's own mapping.
        unsafe { libc::munmap(live_base.cast(), 16 * OS_PAGE) };
    }

    #[test]
    fn a_thawed_heap_cut_and_grown_again_reads_zero() {
        let mut image = HeapImage::default();
        image.set_len(8 * OS_PAGE).unwrap();
        image.write_page(6, &[6u8; OS_PAGE]);
        let mut thawed = image.freeze().unwrap().thaw().unwrap();
        thawed.set_len(4 * OS_PAGE).unwrap();
        thawed.set_len(8 * OS_PAGE).unwrap();
        assert!(thawed.as_slice().iter().all(|&b| b == 0));
        assert_eq!(thawed.written_pages().count(), 0);
    }

    #[test]
    fn an_empty_heap_freezes_and_a_mismatched_heap_is_refused() {
        let frozen = HeapImage::default().freeze().unwrap();
        assert_eq!(frozen.len(), 0);
        assert_eq!(frozen.thaw().unwrap().len(), 0);
        let mut image = HeapImage::default();
        image.set_len(2 * OS_PAGE).unwrap();
        let frozen = image.freeze().unwrap();
        let mut other = vec![0u8; OS_PAGE];
        // SAFETY: refused before anything is mapped.
        let err = unsafe { frozen.map_into(&mut other, 0) }.unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot restore a 8192-byte heap into a 4096-byte memory"),
            "{err}"
        );
    }

    #[test]
    fn bad_lengths_are_refused() {
        let mut image = HeapImage::default();
        assert!(image.set_len(100).is_err());
        assert!(image.set_len(MAX_WASM64_HEAP_BYTES + OS_PAGE).is_err());
        assert_eq!(image.len(), 0);
    }
}
