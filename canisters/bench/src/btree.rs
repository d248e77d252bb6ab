//! The `StableBTreeMap<u64, String>` store, on its own virtual memory.

use std::cell::RefCell;

use ic_stable_structures::{Memory as _, StableBTreeMap};

use crate::ids::{Ids, Scan};
use crate::memory::{self, Memory};
use crate::report::{self, Inserted, Read};

/// Every u64 is a valid key.
pub const MAX_ID: u64 = u64::MAX;

type Map = StableBTreeMap<u64, String, Memory>;

thread_local! {
    static MAP: RefCell<Map> = RefCell::new(Map::init(memory::get(memory::BTREE)));
}

/// Load the map header now (install, upgrade) instead of during a measured call.
pub fn init() {
    MAP.with(|_| ());
}

/// Pages of the map's virtual memory (64 KiB each).
pub fn stable_pages() -> u64 {
    memory::get(memory::BTREE).size()
}

/// Inserts one row per id; an existing id is overwritten and counted as replaced.
/// Returns the rows and the instructions of the inserts alone.
pub fn insert(ids: &Ids, payload: &str) -> Result<(Inserted, u64), String> {
    MAP.with_borrow_mut(|map| {
        report::measure(|| {
            let mut rows = Inserted::default();
            for id in ids.iter() {
                // The map takes ownership of each value, as in the forum benchmark.
                match map.insert(id, payload.to_owned()) {
                    Some(_) => rows.replaced += 1,
                    None => rows.inserted += 1,
                }
            }
            Ok(rows)
        })
    })
}

/// Point lookups, decoding each value found.
pub fn get(ids: &Ids) -> Result<(Read, u64), String> {
    MAP.with_borrow(|map| {
        report::measure(|| {
            let mut rows = Read::default();
            for id in ids.iter() {
                if let Some(value) = map.get(&id) {
                    rows.add_row(value.len());
                }
            }
            Ok(rows)
        })
    })
}

/// Up to `scan.count` values with id >= `scan.offset`, in id order.
pub fn scan(scan: &Scan) -> Result<(Read, u64), String> {
    MAP.with_borrow(|map| {
        report::measure(|| {
            let mut rows = Read::default();
            // `count` <= MAX_ROWS_PER_CALL, so it fits a usize.
            for value in map.values_range(scan.offset..).take(scan.count as usize) {
                rows.add_row(value.len());
            }
            Ok(rows)
        })
    })
}

pub fn len() -> u64 {
    MAP.with_borrow(|map| map.len())
}

/// Empties the map; returns the number of rows removed. Stable memory already grown
/// stays allocated to the map's virtual memory (stable memory never shrinks).
pub fn clear() -> u64 {
    MAP.with_borrow_mut(|map| {
        let removed = map.len();
        map.clear_new();
        removed
    })
}
