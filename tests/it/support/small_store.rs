//! The small store of the exact-count tests of the canisters that answer the bench
//! canister's users calls under a stem of their own (ic-sqlite-vfs, Motoko): its calls and
//! each call's counts.

use icbench::bench_canister::{BenchClient, IdSequence};
use icbench::engine::{MessageReport, PageCounts};

use super::table::Table;

/// A call's counts: the store's instructions, the message's, and its pages.
#[derive(Debug, PartialEq)]
pub struct Counts {
    pub store: u64,
    pub message: u64,
    pub pages: PageCounts,
}

/// The columns of [`Counts::row`] after its labels.
pub const COLUMNS: [&str; 7] = [
    "store",
    "message",
    "heap accessed",
    "heap written",
    "stable accessed",
    "stable written",
    "page charge",
];

/// The calls of [`default_calls`], in order.
pub const CALLS: [&str; 5] = ["fill 2000", "insert 1", "get 1", "get 100", "scan 1000"];

impl Counts {
    /// The counts of a call whose store counted `store` instructions.
    pub fn measured(store: u64, message: &MessageReport) -> Self {
        Counts {
            store,
            message: message.instructions,
            pages: message.pages.expect("the embedded engine counts pages"),
        }
    }

    /// The Wasm pages it touched: heap accessed and written, stable accessed and written.
    pub fn touched(&self) -> [u64; 4] {
        let p = &self.pages;
        [
            p.heap_wasm_pages_accessed,
            p.heap_wasm_pages_written,
            p.stable_wasm_pages_accessed,
            p.stable_wasm_pages_written,
        ]
    }

    /// A row of a table of counts: `labels`, then the [`COLUMNS`].
    pub fn row(&self, labels: &[&str]) -> Vec<String> {
        let [heap_accessed, heap_written, stable_accessed, stable_written] = self.touched();
        let counts = [
            self.store,
            self.message,
            heap_accessed,
            heap_written,
            stable_accessed,
            stable_written,
            self.pages.page_charge_instructions,
        ];
        let labels = labels.iter().map(|l| l.to_string());
        labels.chain(counts.map(|n| n.to_string())).collect()
    }
}

/// A table of counts whose rows start with the labels `labels`.
pub fn table(labels: &[&str]) -> Table {
    Table::new(&[labels, &COLUMNS[..]].concat())
}

/// 2,000 rows (ids 0, 10, ..., 19,990) in one message into the store of `stem`, then the
/// default run's calls in the middle: one row inserted, one key and 100 keys read and 1,000
/// rows scanned (queries), each the first of its kind since the fill: each call's counts.
pub fn default_calls(c: &mut BenchClient<'_>, stem: &str) -> Vec<Counts> {
    let mut out = Vec::new();
    let r = c.add_users(stem, IdSequence::new(0, 10, 2_000)).unwrap();
    assert_eq!(r.value.as_ref().unwrap().rows_inserted, 2_000);
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    let r = c.add_users(stem, IdSequence::new(10_001, 10, 1)).unwrap();
    assert_eq!(r.value.as_ref().unwrap().rows_inserted, 1);
    out.push(Counts::measured(r.value.unwrap().instructions, &r.message));
    for keys in [1, 100] {
        let r = c
            .get_users(stem, IdSequence::new(10_000, 10, keys), false)
            .unwrap();
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
