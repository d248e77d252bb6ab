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

// The map stores' insert, get and scan (this one's, the heap map's and the tune variant's
// bounded map's): one body for a map `MAP` in the calling module, whose value is made from the
// payload by `new`, measured by `len` and read in id order from `scan.offset` by `scan`;
// `check` first refuses a payload. A macro, not a generic function, so that each
// store's code is what it was when it was written out.
macro_rules! map_store_fns {
    ($vis:vis new |$payload:ident| $new:expr, len |$value:ident| $len:expr,
     scan |$map:ident, $scan:ident| $values:expr $(, check $check:block)?) => {
        /// Inserts one row per id; an existing id is overwritten and counted as replaced.
        /// Returns the rows and the instructions of the inserts alone.
        $vis fn insert(ids: &Ids, $payload: &str) -> Result<(Inserted, u64), String> {
            $($check)?
            MAP.with_borrow_mut(|map| {
                report::measure(|| {
                    let mut rows = Inserted::default();
                    for id in ids.iter() {
                        // The map takes ownership of each value, as in the forum benchmark.
                        match map.insert(id, $new) {
                            Some(_) => rows.replaced += 1,
                            None => rows.inserted += 1,
                        }
                    }
                    Ok(rows)
                })
            })
        }

        /// Point lookups, measuring each value found.
        $vis fn get(ids: &Ids) -> Result<(Read, u64), String> {
            MAP.with_borrow(|map| {
                report::measure(|| {
                    let mut rows = Read::default();
                    for id in ids.iter() {
                        if let Some($value) = map.get(&id) {
                            rows.add_row($len);
                        }
                    }
                    Ok(rows)
                })
            })
        }

        /// Up to `scan.count` values with id >= `scan.offset`, in id order.
        $vis fn scan($scan: &Scan) -> Result<(Read, u64), String> {
            MAP.with_borrow(|$map| {
                report::measure(|| {
                    let mut rows = Read::default();
                    // `count` <= MAX_ROWS_PER_CALL, so it fits a usize.
                    for $value in $values.take($scan.count as usize) {
                        rows.add_row($len);
                    }
                    Ok(rows)
                })
            })
        }
    };
}
pub(crate) use map_store_fns;

// Each value found is decoded from stable memory.
map_store_fns!(
    pub new |payload| payload.to_owned(),
    len |value| value.len(),
    scan |map, scan| map.values_range(scan.offset..)
);

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
