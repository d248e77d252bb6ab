//! Saved copies of a canister heap whose never-written pages cost no host memory.
//!
//! Snapshots hold a [`FrozenHeap`]; an upgrade that keeps the heap carries a [`HeapImage`].
//! A `Vec<u8>` would make a heap grown to 4 GiB cost 4 GiB of host memory per copy even
//! when the canister touched one page of it. [`HeapImage`] instead keeps the bytes in an
//! anonymous reservation of the largest heap, where untouched pages read as zero and take
//! no memory, and records which OS pages were ever written, so copies take only those.

mod frozen;

pub use self::frozen::FrozenHeap;

use std::ops::Range;

use anyhow::{anyhow, bail, Result};

use super::heap::{page_range, protect, reserve, MAX_WASM64_HEAP_BYTES};
use super::OS_PAGE;

/// A set of OS page numbers, one bit each: the pages of a heap that were ever written
/// (every other page is zero).
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct PageSet(Vec<u64>);

impl PageSet {
    /// The pages of `bytes` (a heap) that hold a nonzero byte.
    pub fn nonzero_pages(bytes: &[u8]) -> Self {
        bytes
            .chunks(OS_PAGE)
            .enumerate()
            .filter(|(_, chunk)| chunk.iter().any(|&b| b != 0))
            .map(|(page, _)| page as u32)
            .collect()
    }

    pub fn insert(&mut self, page: u32) {
        let (word, bit) = (page as usize / 64, page % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    pub fn contains(&self, page: u32) -> bool {
        let (word, bit) = (page as usize / 64, page % 64);
        self.0.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// The pages in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(word, &bits)| {
            (0..64)
                .filter(move |bit| bits & (1 << bit) != 0)
                .map(move |bit| (word * 64 + bit) as u32)
        })
    }

    /// Removes every page from `first` on.
    pub fn cut_from(&mut self, first: u32) {
        let (word, bit) = (first as usize / 64, first % 64);
        if word < self.0.len() {
            self.0[word] &= (1u64 << bit) - 1;
            self.0.truncate(word + 1);
        }
    }
}

impl FromIterator<u32> for PageSet {
    fn from_iter<I: IntoIterator<Item = u32>>(pages: I) -> Self {
        let mut set = Self::default();
        set.extend(pages);
        set
    }
}

impl Extend<u32> for PageSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, pages: I) {
        for page in pages {
            self.insert(page);
        }
    }
}

pub struct HeapImage {
    /// Start of the reservation; null while nothing was ever reserved (`len` is 0).
    base: *mut u8,
    len: usize,
    /// Every OS page ever written since the image was (re)sized from zero. Every byte
    /// outside these pages is zero, and every byte past `len` too.
    written: PageSet,
}

// SAFETY: the image owns its mapping; shared access is read-only and writes need `&mut`.
unsafe impl Send for HeapImage {}
// SAFETY: as for Send.
unsafe impl Sync for HeapImage {}

impl Default for HeapImage {
    fn default() -> Self {
        Self {
            base: std::ptr::null_mut(),
            len: 0,
            written: PageSet::default(),
        }
    }
}

impl HeapImage {
    /// An image of `bytes` (a heap) whose other pages than `written` are zero: only those
    /// are copied.
    pub fn from_pages(bytes: &[u8], written: &PageSet) -> Result<Self> {
        let mut image = Self::default();
        image.set_len(bytes.len())?;
        for page in written.iter() {
            image.write_page(page, &bytes[page_range(page)]);
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

    /// The pages ever written: every other page of the image is zero.
    pub fn written(&self) -> &PageSet {
        &self.written
    }

    /// The pages ever written, in order.
    pub fn written_pages(&self) -> impl Iterator<Item = u32> + '_ {
        self.written.iter()
    }

    /// One OS page of the image.
    pub fn page(&self, page: u32) -> &[u8] {
        &self.as_slice()[page_range(page)]
    }

    /// Copies `bytes` (one OS page) into `page`.
    pub fn write_page(&mut self, page: u32, bytes: &[u8]) {
        self.as_mut_slice()[page_range(page)].copy_from_slice(bytes);
        self.written.insert(page);
    }

    /// Grows (new bytes are zero) or shrinks (the cut pages are released) the image.
    pub fn set_len(&mut self, len: usize) -> Result<()> {
        if len > MAX_WASM64_HEAP_BYTES || !len.is_multiple_of(OS_PAGE) {
            bail!(
                "a heap image of {len} bytes is not a whole number of pages up to the largest heap"
            );
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
            self.written.cut_from((len / OS_PAGE) as u32);
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
    /// `MADV_DONTNEED`: on the shared mapping of a frozen heap's file that would keep the
    /// file's bytes.
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
            if self.written.contains(page) {
                chunk.copy_from_slice(self.page(page));
            } else if (page as usize) * OS_PAGE < zero_from && chunk.iter().any(|&b| b != 0) {
                chunk.fill(0);
            }
        }
        Ok(())
    }
}

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
    // SAFETY: the caller's contract.
    unsafe { map_fixed_at(addr, len, prot, flags, fd, 0) }
}

/// [`map_fixed`] of the file from byte `offset` (a multiple of the page size) on.
///
/// # Safety
/// As for [`map_fixed`].
unsafe fn map_fixed_at(
    addr: *mut u8,
    len: usize,
    prot: libc::c_int,
    flags: libc::c_int,
    fd: libc::c_int,
    offset: usize,
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
            offset as libc::off_t,
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
        let copy = HeapImage::from_pages(image.as_slice(), image.written()).unwrap();
        assert_eq!(resident_pages(&copy), 1);
        assert_eq!(copy.len(), 4 * GIB);
        assert_eq!(copy.page(12_345), &[7u8; OS_PAGE][..]);
        assert_eq!(copy.written_pages().collect::<Vec<_>>(), vec![12_345]);
    }

    #[test]
    fn a_page_set_holds_pages_in_order_and_cuts_from_a_page_on() {
        let mut set: PageSet = [130, 2, 64, 63, 2].into_iter().collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![2, 63, 64, 130]);
        assert!(set.contains(64) && !set.contains(65) && !set.contains(100_000));
        set.cut_from(64);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![2, 63]);
        set.cut_from(0);
        assert_eq!(set.iter().count(), 0);
        let mut bytes = vec![0u8; 5 * OS_PAGE];
        bytes[3 * OS_PAGE + 17] = 1;
        bytes[5 * OS_PAGE - 1] = 1;
        let nonzero = PageSet::nonzero_pages(&bytes);
        assert_eq!(nonzero.iter().collect::<Vec<_>>(), vec![3, 4]);
    }

    /// A `pages`-page image whose pages `written` each hold their own number in every byte.
    pub(super) fn image_of(pages: usize, written: &[u32]) -> HeapImage {
        let mut image = HeapImage::default();
        image.set_len(pages * OS_PAGE).unwrap();
        for &page in written {
            image.write_page(page, &[page as u8; OS_PAGE]);
        }
        image
    }

    #[test]
    fn shrinking_zeroes_the_cut_pages_for_a_later_grow() {
        let mut image = image_of(8, &[1, 6]);
        image.set_len(4 * OS_PAGE).unwrap();
        assert_eq!(image.written_pages().collect::<Vec<_>>(), vec![1]);
        image.set_len(8 * OS_PAGE).unwrap();
        assert!(image.as_slice()[4 * OS_PAGE..].iter().all(|&b| b == 0));
        assert_eq!(image.page(1), &[1u8; OS_PAGE][..]);
    }

    #[test]
    fn from_pages_and_restore_into_round_trip() {
        let mut live = vec![0u8; 6 * OS_PAGE];
        live[2 * OS_PAGE + 5] = 9;
        let image = HeapImage::from_pages(&live, &PageSet::nonzero_pages(&live)).unwrap();
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

    #[test]
    fn bad_lengths_are_refused() {
        let mut image = HeapImage::default();
        assert!(image.set_len(100).is_err());
        assert!(image.set_len(MAX_WASM64_HEAP_BYTES + OS_PAGE).is_err());
        assert_eq!(image.len(), 0);
    }
}
