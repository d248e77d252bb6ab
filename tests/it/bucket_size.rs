//! Why `--suite tune` does not search the memory manager's bucket size: ic-rusqlite 0.5
//! creates the canister's only `MemoryManager` (`ic_rusqlite::MEMORY_MANAGER`, buckets of
//! 128 pages, not settable), and a bucket size would not change the 64 KiB pages a map's
//! message touches anyway. In ic-stable-structures 0.7.2 buckets start at page 1 (after
//! the header page) and are whole 64 KiB pages long, so a virtual page maps onto exactly
//! one real page and no two virtual pages onto the same one; the translation itself is on
//! the heap; the header page is written on every growth of a virtual memory, whatever the
//! bucket size. So the same map operations touch as many distinct stable pages (read, and
//! written) with any bucket size; what a bucket size changes is the stable memory held (a
//! virtual memory grows a bucket at a time).
//!
//! This checks it exactly on the host: a `StableBTreeMap<u64, String>` beside a second map
//! whose growth interleaves with it, over a manager of bucket size 1, 16 and 128 pages, over
//! a memory that records the pages each operation reads and writes.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use ic_stable_structures::memory_manager::{MemoryId, MemoryManager};
use ic_stable_structures::{Memory, StableBTreeMap, VectorMemory};

const WASM_PAGE: u64 = 65_536;

#[derive(Default)]
struct Touched {
    read: BTreeSet<u64>,
    written: BTreeSet<u64>,
}

/// A memory that records the 64 KiB pages read and written.
#[derive(Clone, Default)]
struct Recording {
    inner: VectorMemory,
    touched: Rc<RefCell<Touched>>,
}

impl Recording {
    fn mark(&self, offset: u64, len: usize, write: bool) {
        if len == 0 {
            return;
        }
        let mut t = self.touched.borrow_mut();
        let set = if write { &mut t.written } else { &mut t.read };
        set.extend(offset / WASM_PAGE..=(offset + len as u64 - 1) / WASM_PAGE);
    }

    /// (pages accessed, pages written) since the last call, as the tracker counts them.
    fn take(&self) -> (usize, usize) {
        let t = std::mem::take(&mut *self.touched.borrow_mut());
        (t.read.union(&t.written).count(), t.written.len())
    }
}

// The trait's read_unsafe is an unsafe fn.
#[allow(unsafe_code)]
impl Memory for Recording {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn grow(&self, pages: u64) -> i64 {
        self.inner.grow(pages)
    }

    fn read(&self, offset: u64, dst: &mut [u8]) {
        self.mark(offset, dst.len(), false);
        self.inner.read(offset, dst)
    }

    unsafe fn read_unsafe(&self, offset: u64, dst: *mut u8, count: usize) {
        self.mark(offset, count, false);
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.inner.read_unsafe(offset, dst, count) }
    }

    fn write(&self, offset: u64, src: &[u8]) {
        self.mark(offset, src.len(), true);
        self.inner.write(offset, src)
    }
}

const ROWS: u64 = 3_000;

/// Per operation, the pages it touched, for a manager of `bucket_size` pages: the fill of
/// `ROWS` rows (ids 0, 10, 20, ...; a second map grows beside it every third row), then a
/// row inserted between each two, then every row read, then scans of 100 rows. Also the
/// stable memory held at the end, in pages.
fn pages_per_operation(bucket_size: u16) -> (Vec<(usize, usize)>, u64) {
    let memory = Recording::default();
    let manager = MemoryManager::init_with_bucket_size(memory.clone(), bucket_size);
    let mut map: StableBTreeMap<u64, String, _> =
        StableBTreeMap::init(manager.get(MemoryId::new(0)));
    let mut other: StableBTreeMap<u64, String, _> =
        StableBTreeMap::init(manager.get(MemoryId::new(1)));
    let payload: String = (0..100).map(|i| char::from(b'a' + i % 26)).collect();
    memory.take();
    let mut out = Vec::new();
    for i in 0..ROWS {
        map.insert(i * 10, payload.clone());
        out.push(memory.take());
        if i % 3 == 0 {
            other.insert(i, payload.clone());
            out.push(memory.take());
        }
    }
    for i in 0..ROWS {
        map.insert(i * 10 + 5, payload.clone());
        out.push(memory.take());
    }
    for i in 0..ROWS {
        assert!(map.get(&(i * 10)).is_some());
        out.push(memory.take());
    }
    for start in (0..ROWS * 10).step_by(1_000) {
        assert_eq!(map.range(start..).take(100).count(), 100);
        out.push(memory.take());
    }
    (out, memory.size())
}

#[test]
fn a_bucket_size_changes_no_page_a_map_operation_touches_only_the_memory_held() {
    let (one, held_one) = pages_per_operation(1);
    let (sixteen, held_sixteen) = pages_per_operation(16);
    let (default, held_default) = pages_per_operation(128);
    assert_eq!(one.len() as u64, ROWS + ROWS / 3 + ROWS + ROWS + ROWS / 100);
    // Every operation, fill included, touches the same number of pages, read and written.
    assert_eq!(one, default);
    assert_eq!(sixteen, default);
    // A lookup reads a node per level of the tree, on pages of their own.
    assert!(default.iter().any(|&(accessed, _)| accessed >= 3));
    // Growth writes the header page: some fill inserts write two pages or more.
    assert!(default.iter().any(|&(_, written)| written >= 2));
    // What a bucket size changes: the stable memory held, a bucket at a time per memory.
    assert!(held_one < held_sixteen && held_sixteen < held_default);
    assert_eq!(held_default, 1 + 2 * 128);
    assert_eq!((held_sixteen - 1) % 16, 0);
}
