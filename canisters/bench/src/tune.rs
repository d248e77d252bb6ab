//! The tune variant of the canister (cargo feature `tune`, built by
//! `scripts/build-canister.sh tune` into `canisters/prebuilt/bench-tune.wasm`): the same
//! canister with two changes the tune suite measures against the default module.
//!
//! 1. Another global allocator for the whole module: talc (`talc::wasm::WasmDynamicTalc`),
//!    in place of wasi-libc's dlmalloc, which Rust's `System` allocator calls on
//!    wasm32-wasip1. SQLite's own C `malloc` still goes to dlmalloc: both grow the heap with
//!    `memory.grow`, and each takes the pages it grew (talc's `WasmGrowAndExtend` claims a new
//!    heap when another allocator grew the memory in between; dlmalloc treats a
//!    non-contiguous `sbrk` as a new segment).
//! 2. A `StableBTreeMap<u64, Name>` whose value type is bounded (`Bound::Bounded { max_size:
//!    100, is_fixed_size: false }`), on virtual memory 10: the store `btree_bounded`
//!    (`add_users_btree_bounded`, `get_users_btree_bounded`, `scan_users_btree_bounded`, ...,
//!    `clear_btree_bounded`). With both key and value bounded, ic-stable-structures 0.7 sizes
//!    the node pages from the largest node (3/4 of it: 1,034 bytes for u64 keys and 100-byte
//!    values) instead of its default 1,024; the rest of the layout is the `String` map's.
//!
//! Everything else, the `btree` store (`StableBTreeMap<u64, String>`) included, is the
//! default module's code; its methods are not in bench.did, which the variant embeds as
//! the default module does (the default module has no such method, so a call is rejected
//! as for any unknown method).

use std::borrow::Cow;
use std::cell::RefCell;

use bench_types::{InsertReport, ReadReport};
use ic_stable_structures::StableBTreeMap;
use ic_stable_structures::storable::{Bound, Storable};

use crate::ids::{Ids, Scan};
use crate::memory::{self, Memory};
use crate::report::{self, Inserted, Read};
use crate::state;

#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// The bound of [`Name`]: the suites' default payload (100 bytes) fits exactly.
pub const NAME_MAX_SIZE: u32 = 100;

/// A `String` whose `Storable` bound is [`NAME_MAX_SIZE`]: the same bytes as `String`'s
/// `Storable`, only the bound differs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Name(String);

impl Storable for Name {
    #[inline]
    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0.as_bytes())
    }

    #[inline]
    fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }

    #[inline]
    fn from_bytes(bytes: Cow<[u8]>) -> Self {
        Name(String::from_utf8(bytes.into_owned()).unwrap())
    }

    const BOUND: Bound = Bound::Bounded {
        max_size: NAME_MAX_SIZE,
        is_fixed_size: false,
    };
}

type Map = StableBTreeMap<u64, Name, Memory>;

thread_local! {
    static MAP: RefCell<Map> = RefCell::new(Map::init(memory::get(memory::BTREE_BOUNDED)));
}

/// Every u64 is a valid key.
const MAX_ID: u64 = u64::MAX;

crate::btree::map_store_fns!(
    new |payload| Name(payload.to_owned()),
    len |value| value.0.len(),
    scan |map, scan| map.values_range(scan.offset..),
    check {
        if payload.len() > NAME_MAX_SIZE as usize {
            return Err(format!(
                "the payload ({} bytes) is larger than the bounded value type's max_size ({NAME_MAX_SIZE} bytes)",
                payload.len()
            ));
        }
    }
);

store_endpoints!(self:
    add_users_btree_bounded, add_users_btree_bounded_ids,
    get_users_btree_bounded, get_users_btree_bounded_update,
    get_users_btree_bounded_ids, get_users_btree_bounded_ids_update,
    scan_users_btree_bounded, scan_users_btree_bounded_update;
    get_sequence, get_list, scan_from);

/// Empties the map; returns the number of rows removed.
#[ic_cdk::update]
fn clear_btree_bounded() -> Result<u64, String> {
    Ok(MAP.with_borrow_mut(|map| {
        let removed = map.len();
        map.clear_new();
        removed
    }))
}
