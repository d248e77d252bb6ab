//! What the memory tracker charges a message: each Wasm page of the heap or stable memory
//! it first accesses, and (where the message tracks modifications) each it first writes,
//! under the vintages that have the tracker; and the page counts every vintage reports.
//!
//! The replica takes a page's charge inside its fault handler. Here the faults are counted
//! in the heap's mapping and in stable memory, and [`Tracker::fold`] takes the charges at
//! the next System API call and at the end of the message: as soon as the canister or the
//! host can see the counter, so every count matches. A message the charges drive out of
//! instructions stops at the next call instead of the next check.

use super::heap::HeapRegion;
use super::stable::StableMemory;
use crate::cost::MemoryTracker;
use crate::PageCounts;

/// The memory tracker's charges of one message so far (instructions), by kind: the first
/// access to a Wasm page of the heap or stable memory, and the first write to one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCharges {
    pub heap_access: u64,
    pub heap_write: u64,
    pub stable_access: u64,
    pub stable_write: u64,
}

impl PageCharges {
    pub fn total(&self) -> u64 {
        self.heap_access + self.heap_write + self.stable_access + self.stable_write
    }

    /// Each kind with the profile frame it is shown as.
    pub fn by_frame(&self) -> [(&'static str, u64); 4] {
        use crate::profile::{HEAP_ACCESS, HEAP_WRITE, STABLE_ACCESS, STABLE_WRITE};
        [
            (HEAP_ACCESS, self.heap_access),
            (HEAP_WRITE, self.heap_write),
            (STABLE_ACCESS, self.stable_access),
            (STABLE_WRITE, self.stable_write),
        ]
    }
}

/// The Wasm pages touched so far in this message: heap accessed, heap written, stable
/// accessed, stable written.
pub fn pages_touched(heap: Option<&HeapRegion>, stable: &StableMemory) -> [u64; 4] {
    let (heap_accessed, heap_written) = heap.map_or((0, 0), |h| {
        (h.wasm_pages_accessed(), h.wasm_pages_written())
    });
    [
        heap_accessed,
        heap_written,
        stable.wasm_pages_accessed(),
        stable.wasm_pages_written(),
    ]
}

/// The results' page columns: `touched` as [`pages_touched`] gives them, and `charge`, the
/// instructions the vintage charged for pages.
pub fn page_counts(touched: [u64; 4], charge: u64) -> PageCounts {
    let [heap_accessed, heap_written, stable_accessed, stable_written] = touched;
    PageCounts {
        heap_wasm_pages_accessed: heap_accessed,
        heap_wasm_pages_written: heap_written,
        stable_wasm_pages_accessed: stable_accessed,
        stable_wasm_pages_written: stable_written,
        page_charge_instructions: charge,
    }
}

/// The tracker's rule for the current message and the charges already taken.
#[derive(Clone, Copy, Debug)]
pub struct Tracker {
    /// The charge per Wasm page, when the replica vintage has the tracker.
    rule: Option<MemoryTracker>,
    /// The message tracks writes (`ModificationTracking::Track`): its first write to a Wasm
    /// page is charged too. Queries only pay for access.
    charge_writes: bool,
    /// Page charges already taken from the counter.
    folded: u64,
    /// The Wasm pages counted (heap and stable memory, accessed and written) when they
    /// were last folded: while the count stays, so do the charges.
    folded_pages: u64,
}

impl Tracker {
    pub fn new(rule: Option<MemoryTracker>) -> Tracker {
        Tracker {
            rule,
            charge_writes: true,
            folded: 0,
            folded_pages: 0,
        }
    }

    /// A message starts: nothing charged yet.
    pub fn begin(&mut self, rule: Option<MemoryTracker>, charge_writes: bool) {
        *self = Tracker {
            charge_writes,
            ..Tracker::new(rule)
        };
    }

    /// Whether this vintage charges for pages (else stable memory's writes are charged per
    /// dirty 4 KiB page, and the heap's after the message).
    pub fn charges_pages(&self) -> bool {
        self.rule.is_some()
    }

    /// The charges already taken from the counter.
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// The charges for `touched` (as [`pages_touched`] gives them), by kind.
    pub fn charges(&self, touched: [u64; 4]) -> PageCharges {
        let Some(rule) = self.rule else {
            return PageCharges::default();
        };
        let per_page = rule.wasm_page_charge();
        let writes = if self.charge_writes { per_page } else { 0 };
        let [heap_accessed, heap_written, stable_accessed, stable_written] = touched;
        PageCharges {
            heap_access: heap_accessed * per_page,
            heap_write: heap_written * writes,
            stable_access: stable_accessed * per_page,
            stable_write: stable_written * writes,
        }
    }

    /// The charges not taken yet, now marked taken: what the caller takes from the counter.
    #[inline]
    pub fn fold(&mut self, heap: Option<&HeapRegion>, stable: &StableMemory) -> u64 {
        if self.rule.is_none() {
            return 0;
        }
        // Every System API call folds twice: most find nothing new, and this check (a few
        // loads) was a third of a small stable memory read's cost when it was the whole sum.
        let pages = heap.map_or(0, |h| h.wasm_pages_counted()) + stable.wasm_pages_counted();
        if pages == self.folded_pages {
            return 0;
        }
        self.folded_pages = pages;
        let total = self.charges(pages_touched(heap, stable)).total();
        let new = total.saturating_sub(self.folded);
        self.folded = total;
        new
    }
}
