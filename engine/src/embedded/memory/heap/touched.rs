//! The Wasm pages a message touched, in the order it touched them: the memory tracker's
//! counts and page maps. Atomics only: the signal handler adds to them.

use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};

/// Wasm pages in the order they were pushed.
pub(super) struct PageOrder {
    /// Entry `i` is the page whose push made the length `i + 1`.
    pages: Box<[AtomicU32]>,
    len: AtomicUsize,
}

impl PageOrder {
    pub(super) fn new(wasm_pages: usize) -> Self {
        Self {
            pages: (0..wasm_pages).map(|_| AtomicU32::new(0)).collect(),
            len: AtomicUsize::new(0),
        }
    }

    pub(super) fn push(&self, wasm_page: usize) {
        let n = self.len.fetch_add(1, Ordering::AcqRel);
        self.pages[n].store(wasm_page as u32, Ordering::Release);
    }

    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub(super) fn to_vec(&self) -> Vec<u64> {
        self.pages[..self.len()]
            .iter()
            .map(|p| p.load(Ordering::Acquire) as u64)
            .collect()
    }

    pub(super) fn clear(&self) {
        self.len.store(0, Ordering::Release);
    }

    /// Empties it, returning what it held.
    pub(super) fn take(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.len.swap(0, Ordering::AcqRel);
        self.pages[..n]
            .iter()
            .map(|p| p.load(Ordering::Acquire) as usize)
    }
}

/// A flag per Wasm page, and the pages counted in the order they were.
pub(super) struct Touched {
    /// One byte per Wasm page: 1 = flagged in this message.
    flags: Box<[AtomicU8]>,
    pub(super) order: PageOrder,
}

impl Touched {
    pub(super) fn new(wasm_pages: usize) -> Self {
        Self {
            flags: (0..wasm_pages).map(|_| AtomicU8::new(0)).collect(),
            order: PageOrder::new(wasm_pages),
        }
    }

    /// Flags `wasm_page`: true when it was not flagged.
    pub(super) fn flag(&self, wasm_page: usize) -> bool {
        self.flags[wasm_page].swap(1, Ordering::AcqRel) == 0
    }

    /// Flags and counts `wasm_page` if it was not flagged.
    pub(super) fn touch(&self, wasm_page: usize) {
        if self.flag(wasm_page) {
            self.order.push(wasm_page);
        }
    }

    /// The flags of the first `wasm_pages` pages.
    pub(super) fn flags(&self, wasm_pages: usize) -> &[AtomicU8] {
        &self.flags[..wasm_pages]
    }

    /// How many pages were counted.
    pub(super) fn count(&self) -> u64 {
        self.order.len() as u64
    }
}
