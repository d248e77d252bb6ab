//! The small store of the exact-count tests of the canisters that answer the bench
//! canister's users calls under a stem of their own (ic-sqlite-vfs, Motoko): its calls and
//! each call's counts.

use icbench::bench_canister::BenchClient;
use icbench::engine::{MessageReport, PageCounts};

/// A call's counts: the store's instructions, the message's, and its pages.
#[derive(PartialEq)]
pub struct Counts {
    pub store: u64,
    pub message: u64,
    pub pages: PageCounts,
}

impl Counts {
    /// A table's row: store and message instructions, heap and stable pages (accessed,
    /// written), page charge.
    pub fn of(store: u64, message: u64, heap: (u64, u64), stable: (u64, u64), charge: u64) -> Self {
        Counts {
            store,
            message,
            pages: PageCounts {
                heap_wasm_pages_accessed: heap.0,
                heap_wasm_pages_written: heap.1,
                stable_wasm_pages_accessed: stable.0,
                stable_wasm_pages_written: stable.1,
                page_charge_instructions: charge,
            },
        }
    }

    /// The counts of a call whose store counted `store` instructions.
    pub fn measured(store: u64, message: &MessageReport) -> Self {
        Counts {
            store,
            message: message.instructions,
            pages: message.pages.expect("the embedded engine counts pages"),
        }
    }
}

/// As the tables write it: (store, message, (heap), (stable), charge).
impl std::fmt::Debug for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = &self.pages;
        write!(
            f,
            "({}, {}, ({}, {}), ({}, {}), {})",
            self.store,
            self.message,
            p.heap_wasm_pages_accessed,
            p.heap_wasm_pages_written,
            p.stable_wasm_pages_accessed,
            p.stable_wasm_pages_written,
            p.page_charge_instructions
        )
    }
}

/// 2,000 rows (ids 0, 10, ..., 19,990) in one message into the store of `stem`, then the
/// default run's calls in the middle: one row inserted, one key and 100 keys read and 1,000
/// rows scanned (queries), each the first of its kind since the fill: each call's counts.
pub fn default_calls(c: &mut BenchClient<'_>, stem: &str) -> Vec<Counts> {
    let mut out = Vec::new();
    let r = c.add_users(stem, 0, 10, 2_000).unwrap();
    assert_eq!(r.value.as_ref().unwrap().rows_inserted, 2_000);
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    let r = c.add_users(stem, 10_001, 10, 1).unwrap();
    assert_eq!(r.value.as_ref().unwrap().rows_inserted, 1);
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    for keys in [1, 100] {
        let r = c.get_users(stem, 10_000, 10, keys, false).unwrap();
        let v = r.value.unwrap();
        assert_eq!((v.rows_found, v.bytes_read), (keys, keys * 100));
        out.push(Counts::measured(v.instructions, &r.message));
    }
    let r = c.scan_users(stem, 10_000, 1_000, false).unwrap();
    let v = r.value.unwrap();
    // 10,000..=19,990 (1,000 rows) and the inserted 10,001.
    assert_eq!((v.rows_found, v.bytes_read), (1_000, 100_000));
    out.push(Counts::measured(v.instructions, &r.message));
    out
}
