//! The frozen heap of a saved state: on Linux a memfd (or the cache entry the state was
//! read from) that every engine loading the state maps copy-on-write, or a layer of changed
//! pages over another frozen heap; elsewhere a plain copy.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Result};

use super::super::heap::{drop_private, page_range};
use super::super::OS_PAGE;
use super::{map_fixed, map_fixed_at, HeapImage, PageSet};

/// A heap image that never changes again: the heap of a saved state (a snapshot). On Linux
/// its bytes live in a memfd, and every engine that loads the state maps that file
/// copy-on-write as its live heap ([`FrozenHeap::map_into`]), so a fork of the engine pays
/// only for the pages it writes instead of a copy of the whole heap. Elsewhere it is a
/// plain copy.
pub struct FrozenHeap {
    /// The bytes, read-only: on Linux a shared mapping of `file`.
    image: HeapImage,
    /// Unique per frozen file (0: no file), to recognise the views mapped from it.
    id: u64,
    /// Where a view maps its bytes from; None for an empty heap (nothing to map) or a
    /// layered one.
    #[cfg(target_os = "linux")]
    file: Option<Backing>,
    /// A frozen heap kept as another one plus the pages that differ (see
    /// [`FrozenHeap::layered`]); `image` is then empty.
    layer: Option<Layer>,
}

/// A shared, open file a frozen heap's pages lie in.
#[cfg(target_os = "linux")]
type SharedFd = std::sync::Arc<std::os::fd::OwnedFd>;

/// The file or files a frozen heap's bytes are in.
#[cfg(target_os = "linux")]
enum Backing {
    /// A memfd that is the heap: page `p` at byte `p * OS_PAGE`.
    Whole(SharedFd),
    /// Runs of its written pages in files (cache entries: a state's, a start's changes to
    /// it), ascending; every other page zero.
    Runs(Box<[FileRun]>),
}

/// Consecutive written pages of a frozen heap stored consecutively in a file.
#[cfg(target_os = "linux")]
struct FileRun {
    first: u32,
    pages: u32,
    file: SharedFd,
    /// Where the first of them starts in the file (a multiple of `OS_PAGE`).
    offset: u64,
}

/// Where one page of a frozen heap lies: its number, its file and its offset there.
#[cfg(target_os = "linux")]
pub type PageSource = (u32, SharedFd, u64);

/// The most runs of pages a heap is mapped from a cache entry in: a view maps each (and the
/// gaps between), and a heap scattered further is copied into a memfd instead. The states
/// of a default run have 3 to 41.
#[cfg(target_os = "linux")]
const MAX_FILE_RUNS: usize = 1024;

/// The pages of a layered [`FrozenHeap`] that differ from its base, which is never itself
/// layered.
struct Layer {
    base: std::sync::Arc<FrozenHeap>,
    pages: std::collections::BTreeMap<u32, Box<[u8]>>,
}

impl HeapImage {
    /// The image's bytes as a [`FrozenHeap`]: one copy of its written pages.
    #[cfg(test)]
    pub fn freeze(&self) -> Result<FrozenHeap> {
        FrozenHeap::of(self.as_slice(), &self.written)
    }
}

impl FrozenHeap {
    /// `bytes` (a heap whose other pages than `written` are zero) frozen: one copy of the
    /// written pages.
    pub fn of(bytes: &[u8], written: &PageSet) -> Result<FrozenHeap> {
        let len = bytes.len();
        Self::from_pages(
            len,
            written
                .iter()
                .take_while(|&p| page_range(p).end <= len)
                .map(|p| (p, &bytes[page_range(p)])),
        )
    }

    /// A heap of `len` bytes holding `pages` (each one OS page, numbers ascending; every
    /// other page zero), frozen: one copy of each page, straight from where it lies (a
    /// cached state's pages go from the mapped file into the frozen one).
    #[cfg(target_os = "linux")]
    pub fn from_pages<'a>(
        len: usize,
        pages: impl Iterator<Item = (u32, &'a [u8])>,
    ) -> Result<FrozenHeap> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Ok(FrozenHeap {
                image: HeapImage::default(),
                id: 0,
                file: None,
                layer: None,
            });
        }
        let (image, file) = new_frozen_file(len)?;
        // Written with pwritev, not through a mapping: the pages go into the file without
        // being mapped here, so the process's resident memory counts them only where a view
        // maps them (a 10,000,000-row heap map's snapshot is 1.5 GB), not once more while
        // the snapshot is taken. Consecutive pages go in one call.
        let mut written = PageSet::default();
        let mut run = PageRun::default();
        for (page, bytes) in pages {
            check_fits(page, bytes, len)?;
            if written.contains(page) {
                bail!("heap page {page} is given twice");
            }
            run.push(page, bytes, file.as_raw_fd())?;
            written.insert(page);
        }
        run.write(file.as_raw_fd())?;
        Self::sealed(image, file, written)
    }

    /// The frozen heap of `image` (reserved, `len` set) and `file` (holding its bytes):
    /// the file mapped over the reservation.
    #[cfg(target_os = "linux")]
    fn sealed(
        mut image: HeapImage,
        file: std::os::fd::OwnedFd,
        written: PageSet,
    ) -> Result<FrozenHeap> {
        use std::os::fd::AsRawFd;
        // Read-only: a stray write would change every fork's heap.
        // SAFETY: the first `len` bytes of the fresh reservation become the shared file.
        unsafe {
            map_fixed(
                image.base,
                image.len(),
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
            )?
        };
        image.written = written;
        Ok(FrozenHeap {
            image,
            id: NEXT_FROZEN_ID.fetch_add(1, Ordering::Relaxed),
            file: Some(Backing::Whole(std::sync::Arc::new(file))),
            layer: None,
        })
    }

    /// A heap of `len` bytes whose written pages, `pages` (ascending), lie one after another
    /// in `file` from byte `offset` on (a cache entry's state), every other page zero:
    /// frozen without a copy (see [`FrozenHeap::from_sources`]). None where that cannot be,
    /// and off Linux: the caller copies them.
    pub fn in_file(
        file: &std::fs::File,
        offset: u64,
        len: usize,
        pages: &[u32],
    ) -> Result<Option<FrozenHeap>> {
        #[cfg(target_os = "linux")]
        {
            let file: SharedFd = std::sync::Arc::new(file.try_clone()?.into());
            let at = |i: usize| offset + (i * OS_PAGE) as u64;
            Self::from_sources(
                len,
                pages
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| (p, file.clone(), at(i))),
            )
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (file, offset, len, pages);
            Ok(None)
        }
    }

    /// A heap of `len` bytes whose written pages lie where `sources` says (numbers
    /// ascending), every other page zero: frozen without a copy, each run of pages
    /// consecutive in one file mapped from it where a memfd would be. None where that
    /// cannot be (a page not on a page boundary of its file, or more than
    /// [`MAX_FILE_RUNS`] runs): the caller copies the pages.
    #[cfg(target_os = "linux")]
    pub fn from_sources(
        len: usize,
        sources: impl IntoIterator<Item = PageSource>,
    ) -> Result<Option<FrozenHeap>> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Ok(None);
        }
        let mut runs: Vec<FileRun> = Vec::new();
        let mut written = PageSet::default();
        for (page, file, offset) in sources {
            if page_range(page).end > len {
                bail!("heap page {page} does not fit a {len}-byte heap");
            }
            if !offset.is_multiple_of(OS_PAGE as u64) {
                return Ok(None);
            }
            match runs.last_mut() {
                Some(run) if run.first as u64 + run.pages as u64 > page as u64 => {
                    bail!("heap page {page} is out of order")
                }
                Some(run)
                    if run.first as u64 + run.pages as u64 == page as u64
                        && std::sync::Arc::ptr_eq(&run.file, &file)
                        && run.offset + (run.pages as usize * OS_PAGE) as u64 == offset =>
                {
                    run.pages += 1
                }
                _ => runs.push(FileRun {
                    first: page,
                    pages: 1,
                    file,
                    offset,
                }),
            }
            if runs.len() > MAX_FILE_RUNS {
                return Ok(None);
            }
            written.insert(page);
        }
        let mut image = HeapImage::default();
        image.set_len(len)?;
        // Read-only, as a memfd's shared view: a stray write would change every fork's heap.
        image.protect(0..len, libc::PROT_READ)?;
        for run in &runs {
            // SAFETY: inside the fresh reservation (checked above); the file's bytes there
            // are the run's pages.
            let mapped = unsafe {
                map_fixed_at(
                    image.base.add(page_range(run.first).start),
                    run.pages as usize * OS_PAGE,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    run.file.as_raw_fd(),
                    run.offset as usize,
                )
            };
            if mapped.is_err() {
                // A file system that cannot map its files: the pages are copied (the
                // image and its mappings go with it).
                return Ok(None);
            }
        }
        image.written = written;
        Ok(Some(FrozenHeap {
            image,
            id: NEXT_FROZEN_ID.fetch_add(1, Ordering::Relaxed),
            file: Some(Backing::Runs(runs.into_boxed_slice())),
            layer: None,
        }))
    }

    /// Where `pages` (written pages of this heap, ascending) lie in its files; None for a
    /// heap not in files (a copy, a layered one).
    #[cfg(target_os = "linux")]
    pub fn sources(&self, pages: &[u32]) -> Option<Vec<PageSource>> {
        match self.file.as_ref()? {
            Backing::Whole(file) => Some(
                pages
                    .iter()
                    .map(|&p| (p, file.clone(), page_range(p).start as u64))
                    .collect(),
            ),
            Backing::Runs(runs) => pages
                .iter()
                .map(|&p| {
                    let i = runs.partition_point(|r| r.first <= p).checked_sub(1)?;
                    let run = &runs[i];
                    let n = p - run.first;
                    (n < run.pages).then(|| {
                        (
                            p,
                            run.file.clone(),
                            run.offset + (n as usize * OS_PAGE) as u64,
                        )
                    })
                })
                .collect(),
        }
    }

    /// `live` (a canister's heap, whose other pages than `written` are zero) frozen, and
    /// `live` turned into a view of it, as [`FrozenHeap::map_into`] leaves a heap: a block
    /// at a time, each block's pages written into the file and the block then mapped from
    /// it, so the live heap's own pages go back to the system as the copy grows, instead
    /// of both being held until the end (a 10,000,000-row SQLite heap is 1.2 GB). Returns
    /// the frozen heap and the id `map_into` would have returned (0: `live` kept its bytes
    /// and is no view, where there is no file to map).
    ///
    /// # Safety
    /// As for `map_into`: `live` is the accessible part of a heap mapping this engine owns,
    /// not armed, and no Wasm runs meanwhile.
    pub unsafe fn moved_from(live: &mut [u8], written: &PageSet) -> Result<(FrozenHeap, u64)> {
        #[cfg(target_os = "linux")]
        if !live.is_empty() && (live.as_ptr() as usize).is_multiple_of(OS_PAGE) {
            use std::os::fd::AsRawFd;
            /// Bytes of heap copied before they are mapped back from the file.
            const BLOCK: usize = 32 << 20;
            let len = live.len();
            let (image, file) = new_frozen_file(len)?;
            let base = live.as_mut_ptr();
            let mut set = PageSet::default();
            let mut pages = written
                .iter()
                .take_while(|&p| page_range(p).end <= len)
                .peekable();
            for start in (0..len).step_by(BLOCK) {
                let end = (start + BLOCK).min(len);
                let mut run = PageRun::default();
                while let Some(page) = pages.next_if(|&p| page_range(p).start < end) {
                    // SAFETY: a page of `live` (checked to end within it above); the slice
                    // is dropped by `run.write` before the block is mapped over.
                    let bytes = unsafe {
                        std::slice::from_raw_parts(base.add(page_range(page).start), OS_PAGE)
                    };
                    run.push(page, bytes, file.as_raw_fd())?;
                    set.insert(page);
                }
                run.write(file.as_raw_fd())?;
                // SAFETY: the caller's contract; the block's bytes are in the file now
                // (pages not written are zero in both), so the view holds what was there.
                unsafe {
                    map_fixed_at(
                        base.add(start),
                        end - start,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE,
                        file.as_raw_fd(),
                        start,
                    )?
                };
            }
            let frozen = Self::sealed(image, file, set)?;
            let id = frozen.id;
            return Ok((frozen, id));
        }
        Ok((Self::of(live, written)?, 0))
    }

    /// A heap of `len` bytes holding `pages` (each one OS page; every other page zero),
    /// frozen: a copy.
    #[cfg(not(target_os = "linux"))]
    pub fn from_pages<'a>(
        len: usize,
        pages: impl Iterator<Item = (u32, &'a [u8])>,
    ) -> Result<FrozenHeap> {
        let mut image = HeapImage::default();
        image.set_len(len)?;
        for (page, bytes) in pages {
            check_fits(page, bytes, len)?;
            image.write_page(page, bytes);
        }
        Ok(FrozenHeap {
            image,
            id: 0,
            layer: None,
        })
    }

    /// `bytes` (a heap equal to `parent` but for the pages `changed`) frozen as `parent`
    /// plus copies of those pages, instead of a copy of the whole heap: a snapshot taken
    /// after a few messages on a restored state (SQLite's journal mode set on a
    /// 10,000,000-row canister) costs the pages they wrote. A layered parent's base is
    /// taken with its pages, so layers never stack.
    pub fn layered(
        parent: &std::sync::Arc<FrozenHeap>,
        bytes: &[u8],
        changed: impl Iterator<Item = u32>,
    ) -> Result<FrozenHeap> {
        if bytes.len() != parent.len() {
            bail!(
                "a {}-byte heap cannot be kept as changes to a {}-byte one",
                bytes.len(),
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
                    .map(|p| (p, bytes[page_range(p)].to_vec().into_boxed_slice()))
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
            let rw = libc::PROT_READ | libc::PROT_WRITE;
            let runs = match file {
                Backing::Whole(file) => {
                    // SAFETY: the caller hands us the heap's own mapping, `len` bytes of it.
                    unsafe {
                        map_fixed(
                            live.as_mut_ptr(),
                            self.len(),
                            rw,
                            libc::MAP_PRIVATE,
                            file.as_raw_fd(),
                        )?
                    };
                    return Ok(self.id);
                }
                Backing::Runs(runs) => runs,
            };
            // Zero, then each run from its file over it.
            // SAFETY: as above; every run lies inside `len` (checked by `from_sources`).
            unsafe {
                map_fixed(
                    live.as_mut_ptr(),
                    self.len(),
                    rw,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                )?;
                for run in runs.iter() {
                    map_fixed_at(
                        live.as_mut_ptr().add(page_range(run.first).start),
                        run.pages as usize * OS_PAGE,
                        rw,
                        libc::MAP_PRIVATE,
                        run.file.as_raw_fd(),
                        run.offset as usize,
                    )?;
                }
            }
            return Ok(self.id);
        }
        self.image.restore_into(live, zero_from)?;
        Ok(0)
    }

    /// Gives `pages` (sorted) of the live heap `live` their frozen bytes again; `view` is
    /// what [`FrozenHeap::map_into`] returned for it. A view of this heap drops its own
    /// copies of them, which makes them the file's shared pages again (a fork's memory
    /// stays what one scenario writes, not all scenarios together); any other heap gets
    /// them copied.
    ///
    /// # Safety
    /// As for `map_into`: `live` is the heap's own mapping, and `view` is what `map_into`
    /// returned for it, with the heap not grown since.
    /// Returns whether it dropped them (the heap is a view of this one): then every page
    /// of `pages` but the layer's own holds the file's bytes again.
    pub unsafe fn revert_live(&self, live: &mut [u8], view: u64, pages: &[u32]) -> Result<bool> {
        if self.id != 0 && view == self.id && live.len() == self.len() {
            // SAFETY: the caller's contract: a private view of our file (a layer's: of its
            // base's), `len` bytes long.
            unsafe { drop_private(live.as_mut_ptr(), self.len(), pages)? };
            self.rewrite_layer(pages, |p, bytes| live[page_range(p)].copy_from_slice(bytes));
            return Ok(true);
        }
        for &p in pages {
            live[page_range(p)].copy_from_slice(self.page(p));
        }
        Ok(false)
    }

    /// Whether [`FrozenHeap::revert_live`] reverts a heap that is the view `view` (of this
    /// heap's length) by dropping its copies alone, touching none of its bytes.
    pub fn reverts_by_dropping(&self, view: u64) -> bool {
        self.id != 0 && view == self.id && self.layer.is_none()
    }

    /// The pages a layered heap keeps of its own (none for a whole one): a view of it
    /// holds copies of them, not the file's bytes.
    pub fn own_pages(&self) -> impl Iterator<Item = u32> + '_ {
        self.layer.iter().flat_map(|l| l.pages.keys().copied())
    }

    /// Whether `page` is one of [`FrozenHeap::own_pages`].
    pub fn is_own_page(&self, page: u32) -> bool {
        self.layer
            .as_ref()
            .is_some_and(|l| l.pages.contains_key(&page))
    }
}

/// Refuses `bytes` as page `page` of a `len`-byte heap unless it is one whole page inside it.
fn check_fits(page: u32, bytes: &[u8], len: usize) -> Result<()> {
    if bytes.len() != OS_PAGE || page_range(page).end > len {
        bail!(
            "heap page {page} of {} bytes does not fit a {len}-byte heap",
            bytes.len()
        );
    }
    Ok(())
}

/// Consecutive pages bound for a frozen heap's file, written with one `pwritev` per
/// `IOV_MAX` pages.
#[cfg(target_os = "linux")]
#[derive(Default)]
struct PageRun<'a> {
    first: u32,
    pages: Vec<&'a [u8]>,
}

#[cfg(target_os = "linux")]
impl<'a> PageRun<'a> {
    /// Whether `page` follows the run (an empty run takes any page).
    fn extends(&self, page: u32) -> bool {
        self.pages.is_empty() || page as u64 == self.first as u64 + self.pages.len() as u64
    }

    /// Adds `page` (numbers ascending), writing the run so far first when `page` does not
    /// follow it.
    fn push(&mut self, page: u32, bytes: &'a [u8], fd: std::os::fd::RawFd) -> Result<()> {
        if !self.extends(page) {
            self.write(fd)?;
        }
        if self.pages.is_empty() {
            self.first = page;
        }
        self.pages.push(bytes);
        Ok(())
    }

    /// Writes the run at its place in `fd` and empties it.
    fn write(&mut self, fd: std::os::fd::RawFd) -> Result<()> {
        const IOV_MAX: usize = 1024;
        let mut at = page_range(self.first).start as u64;
        for batch in self.pages.chunks(IOV_MAX) {
            let mut iov: Vec<libc::iovec> = batch
                .iter()
                .map(|b| libc::iovec {
                    iov_base: b.as_ptr() as *mut _,
                    iov_len: b.len(),
                })
                .collect();
            let mut rest = &mut iov[..];
            while !rest.is_empty() {
                // SAFETY: every iovec points into a live page borrowed for 'a.
                let n = unsafe {
                    libc::pwritev(
                        fd,
                        rest.as_ptr(),
                        rest.len() as libc::c_int,
                        at as libc::off_t,
                    )
                };
                if n <= 0 {
                    let e = std::io::Error::last_os_error();
                    if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    bail!("writing a heap snapshot: {e}");
                }
                at += n as u64;
                // A short write resumes where it stopped, mid-page if need be.
                let mut n = n as usize;
                while n > 0 && n >= rest[0].iov_len {
                    n -= rest[0].iov_len;
                    rest = &mut rest[1..];
                }
                if n > 0 {
                    rest[0].iov_base = (rest[0].iov_base as usize + n) as *mut _;
                    rest[0].iov_len -= n;
                }
            }
        }
        self.pages.clear();
        Ok(())
    }
}

/// The next [`FrozenHeap::id`].
static NEXT_FROZEN_ID: AtomicU64 = AtomicU64::new(1);

/// A reserved image of `len` bytes and an empty memfd of that size, for a frozen heap.
#[cfg(target_os = "linux")]
fn new_frozen_file(len: usize) -> Result<(HeapImage, std::os::fd::OwnedFd)> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // Sized (and `len` checked) before the file is.
    let mut image = HeapImage::default();
    image.set_len(len)?;
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
    if unsafe { libc::ftruncate(file.as_raw_fd(), len as libc::off_t) } != 0 {
        bail!(
            "cannot size a {len}-byte heap snapshot: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok((image, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::memory::heap::{protect, reserve};
    use crate::embedded::memory::image::tests::image_of;

    /// Anonymous (private, written) kB of the mapping that starts at `addr`: what a
    /// copy-on-write view of a frozen heap costs on its own.
    #[cfg(target_os = "linux")]
    fn private_kb(addr: *const u8) -> usize {
        crate::testing::mapping_kb(addr, "Anonymous")
    }

    /// A live heap: an accessible mapping of our own, as the engine's heaps are.
    struct Live {
        base: *mut u8,
        len: usize,
    }

    impl Live {
        fn new(pages: usize) -> Self {
            let len = pages * OS_PAGE;
            let base = reserve(len).unwrap();
            protect(base, len, libc::PROT_READ | libc::PROT_WRITE).unwrap();
            Self { base, len }
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: the mapping made in `new`, accessible, used only through `self`.
            unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
        }

        /// `frozen` mapped in as the engine loads a state; returns the view's id.
        fn load(&mut self, frozen: &FrozenHeap) -> u64 {
            let len = self.len;
            // SAFETY: our own mapping, nothing else uses it.
            unsafe { frozen.map_into(self.bytes(), len).unwrap() }
        }
    }

    impl Drop for Live {
        fn drop(&mut self) {
            // SAFETY: unmapping the test's own mapping.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }

    #[test]
    fn a_frozen_heap_is_shared_and_each_view_pays_for_its_writes() {
        let image = image_of(64, &[3, 40]);
        let frozen = FrozenHeap::of(image.as_slice(), image.written()).unwrap();
        let original = image.as_slice().to_vec();
        drop(image);
        assert_eq!(frozen.len(), 64 * OS_PAGE);
        assert_eq!(frozen.written_pages().collect::<Vec<_>>(), vec![3, 40]);
        assert_eq!(frozen.page(40), &[40u8; OS_PAGE][..]);

        let (mut a, mut b) = (Live::new(64), Live::new(64));
        // Other bytes in a heap before it takes the view are gone after.
        b.bytes()[7 * OS_PAGE] = 1;
        a.load(&frozen);
        b.load(&frozen);
        assert_eq!(a.bytes(), &original[..]);
        a.bytes()[3 * OS_PAGE..4 * OS_PAGE].fill(9);
        a.bytes()[5 * OS_PAGE] = 5;
        // The other view and the frozen heap still hold the frozen bytes.
        assert_eq!(b.bytes(), &original[..]);
        assert_eq!(frozen.page(3), &[3u8; OS_PAGE][..]);
        assert_eq!(frozen.page(5), &[0u8; OS_PAGE][..]);
        assert_eq!(a.bytes()[40 * OS_PAGE], 40);
        #[cfg(target_os = "linux")]
        {
            // Only the two pages written through `a` are its own; `b` has none.
            assert_eq!(private_kb(a.base), 2 * OS_PAGE / 1024);
            assert_eq!(private_kb(b.base), 0);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_heap_in_a_file_is_mapped_from_it_with_zeros_between_its_runs() {
        use std::io::Write;
        // Pages 2, 3 and 7 of a 10-page heap, one after another from byte 4096 of a file.
        let path = std::env::temp_dir().join(format!("icbench-in-file-{}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&[0xEE; OS_PAGE]).unwrap();
        for p in [2u8, 3, 7] {
            file.write_all(&[p; OS_PAGE]).unwrap();
        }
        let file = std::fs::File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let len = 10 * OS_PAGE;
        let at = OS_PAGE as u64;
        assert!(FrozenHeap::in_file(&file, at + 1, len, &[2, 3, 7])
            .unwrap()
            .is_none());
        let e = FrozenHeap::in_file(&file, at, len, &[3, 2]).err().unwrap();
        assert!(e.to_string().contains("out of order"), "{e}");
        assert!(FrozenHeap::in_file(&file, at, len, &[2, 3, 10]).is_err());

        let frozen = FrozenHeap::in_file(&file, at, len, &[2, 3, 7])
            .unwrap()
            .unwrap();
        assert_eq!(frozen.written_pages().collect::<Vec<_>>(), vec![2, 3, 7]);
        let want: Vec<u8> = (0..10u8)
            .flat_map(|p| [if [2, 3, 7].contains(&p) { p } else { 0 }; OS_PAGE])
            .collect();
        for p in 0..10 {
            assert_eq!(frozen.page(p), &want[page_range(p)]);
        }
        let mut live = Live::new(10);
        live.bytes()[5 * OS_PAGE] = 1;
        let view = live.load(&frozen);
        assert_eq!(live.bytes(), &want[..]);
        live.bytes()[3 * OS_PAGE] = 9;
        live.bytes()[5 * OS_PAGE] = 9;
        assert_eq!(frozen.page(3)[0], 3);
        // SAFETY: our own mapping; `view` is what map_into returned for it.
        assert!(unsafe { frozen.revert_live(live.bytes(), view, &[3, 5]).unwrap() });
        assert_eq!(live.bytes(), &want[..]);
        assert_eq!(private_kb(live.base), 0);
    }

    #[test]
    fn a_heap_moved_into_its_frozen_copy_keeps_its_bytes_and_none_of_its_own_pages() {
        // Two 32 MiB blocks and part of a third, with pages on both sides of each boundary.
        let pages = 2 * 8192 + 100;
        let mut live = Live::new(pages);
        let written: PageSet = [0u32, 5, 8191, 8192, 9000, 16_384, 16_483]
            .into_iter()
            .collect();
        for p in written.iter() {
            live.bytes()[page_range(p)].fill((p % 251) as u8 + 1);
        }
        let before = live.bytes().to_vec();
        #[cfg(target_os = "linux")]
        assert!(private_kb(live.base) >= written.iter().count() * OS_PAGE / 1024);
        // SAFETY: our own mapping, nothing else uses it.
        let (frozen, id) = unsafe { FrozenHeap::moved_from(live.bytes(), &written).unwrap() };
        assert_eq!(live.bytes(), &before[..]);
        assert_eq!(frozen.len(), pages * OS_PAGE);
        assert_eq!(
            frozen.written_pages().collect::<Vec<_>>(),
            written.iter().collect::<Vec<_>>()
        );
        for p in written.iter() {
            assert_eq!(frozen.page(p), &before[page_range(p)]);
        }
        #[cfg(target_os = "linux")]
        {
            // The live heap is a view of the copy: no page of its own until it writes one,
            // and a write stays its own.
            assert_ne!(id, 0);
            assert_eq!(private_kb(live.base), 0);
            live.bytes()[9000 * OS_PAGE] = 0;
            assert_eq!(frozen.page(9000)[0], (9000 % 251) as u8 + 1);
            // SAFETY: our own mapping; `id` is what moved_from returned for it.
            assert!(unsafe { frozen.revert_live(live.bytes(), id, &[9000]).unwrap() });
            assert_eq!(live.bytes(), &before[..]);
        }
        #[cfg(not(target_os = "linux"))]
        assert_eq!(id, 0);
    }

    #[test]
    fn a_layered_heap_has_its_parents_bytes_but_its_own_pages_everywhere() {
        let image = image_of(16, &[2, 9]);
        let base = std::sync::Arc::new(image.freeze().unwrap());
        // A canister loaded from `base`, then a message wrote 9 and 12.
        let mut live = Live::new(16);
        live.load(&base);
        live.bytes()[9 * OS_PAGE..10 * OS_PAGE].fill(90);
        live.bytes()[12 * OS_PAGE..13 * OS_PAGE].fill(12);
        let committed = live.bytes().to_vec();
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
        let mut again = Live::new(16);
        again.load(&one);
        assert_eq!(again.bytes(), &committed[..]);
        again.bytes()[2 * OS_PAGE..3 * OS_PAGE].fill(20);
        let two = FrozenHeap::layered(&one, again.bytes(), [2].into_iter()).unwrap();
        assert_eq!(two.layer_pages(), 3);
        assert_eq!(two.page(2), &[20u8; OS_PAGE][..]);
        assert_eq!(two.page(12), &[12u8; OS_PAGE][..]);
        assert!(two.layer.as_ref().unwrap().base.layer.is_none());

        // A live heap takes the layer as a view and reverts to the layer's bytes, not the
        // parent's.
        let mut view = Live::new(16);
        let id = view.load(&one);
        assert_eq!(view.bytes(), &committed[..]);
        view.bytes()[9 * OS_PAGE..10 * OS_PAGE].fill(3);
        view.bytes()[12 * OS_PAGE] = 3;
        view.bytes()[2 * OS_PAGE] = 3;
        // SAFETY: our own mapping; `id` is what map_into returned for it.
        unsafe { one.revert_live(view.bytes(), id, &[2, 9, 12]).unwrap() };
        assert_eq!(view.bytes(), &committed[..]);

        // A heap of another length is not a layer of it.
        assert!(FrozenHeap::layered(&base, &[0u8; 32 * OS_PAGE], [1].into_iter()).is_err());
    }

    #[test]
    fn reverting_a_view_drops_its_copies_and_any_other_heap_gets_the_bytes() {
        let image = image_of(16, &[3]);
        let frozen = image.freeze().unwrap();

        let mut live = Live::new(16);
        let id = live.load(&frozen);
        live.bytes()[3 * OS_PAGE] = 7;
        live.bytes()[11 * OS_PAGE] = 7;
        // SAFETY: our own mapping; `id` is what map_into returned.
        unsafe { frozen.revert_live(live.bytes(), id, &[3, 11]).unwrap() };
        assert_eq!(live.bytes(), image.as_slice());
        #[cfg(target_os = "linux")]
        {
            assert_ne!(id, 0);
            assert_eq!(private_kb(live.base), 0);
        }
        // A heap that is not this view (id 0: a copy) is written, never dropped to zero.
        live.bytes()[3 * OS_PAGE] = 7;
        // SAFETY: as above.
        unsafe { frozen.revert_live(live.bytes(), 0, &[3]).unwrap() };
        assert_eq!(live.bytes(), image.as_slice());
    }

    #[test]
    fn a_heap_frozen_from_scattered_pages_holds_them_and_zeros_elsewhere() {
        // A run longer than one pwritev takes, a gap, and a lone page at the end.
        let pages: Vec<(u32, Vec<u8>)> = (2..1100u32)
            .chain([1500, 1999])
            .map(|p| (p, vec![(p % 251) as u8 + 1; OS_PAGE]))
            .collect();
        let len = 2000 * OS_PAGE;
        let frozen =
            FrozenHeap::from_pages(len, pages.iter().map(|(p, b)| (*p, b.as_slice()))).unwrap();
        assert_eq!(frozen.len(), len);
        assert!(frozen.written_pages().eq(pages.iter().map(|(p, _)| *p)));
        for (p, bytes) in &pages {
            assert_eq!(frozen.page(*p), bytes.as_slice(), "page {p}");
        }
        for p in [0, 1, 1100, 1499, 1998] {
            assert!(frozen.page(p).iter().all(|&b| b == 0), "page {p}");
        }
    }

    #[test]
    fn pages_that_do_not_fit_the_heap_are_refused() {
        let page = [1u8; OS_PAGE];
        let refused = |len: usize, pages: &[(u32, &[u8])]| {
            FrozenHeap::from_pages(len, pages.iter().copied())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            refused(2 * OS_PAGE, &[(2, &page)]),
            "heap page 2 of 4096 bytes does not fit a 8192-byte heap"
        );
        assert_eq!(
            refused(2 * OS_PAGE, &[(0, &page[..100])]),
            "heap page 0 of 100 bytes does not fit a 8192-byte heap"
        );
        #[cfg(target_os = "linux")]
        assert_eq!(
            refused(2 * OS_PAGE, &[(1, &page), (1, &page)]),
            "heap page 1 is given twice"
        );
    }

    #[test]
    fn an_empty_heap_freezes_and_a_mismatched_heap_is_refused() {
        let frozen = HeapImage::default().freeze().unwrap();
        assert_eq!(frozen.len(), 0);
        assert_eq!(frozen.written_pages().count(), 0);
        let image = image_of(2, &[]);
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
}
