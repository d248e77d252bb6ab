//! The heap store: a `std::collections::BTreeMap<u64, String>` on the Wasm heap, the map
//! every Rust canister starts with. Messages touch only the heap; the map reaches stable
//! memory only across an upgrade, the way IC developers commonly save it: `pre_upgrade`
//! encodes the whole map (Candid or CBOR, `configure_heap`) into a `Vec` and writes it with
//! ic-stable-structures' `Writer`, as an 8-byte little-endian length then the bytes, to a
//! virtual memory of the shared manager that no other store touches (`memory::HEAP_UPGRADE`);
//! `post_upgrade` reads it back and decodes it. The map and its encoded copy are on the heap
//! together in both hooks, as in that pattern.

use std::cell::RefCell;
use std::collections::BTreeMap;

use bench_types::names::HeapEncoding;
use ic_stable_structures::Memory as _;
use ic_stable_structures::writer::Writer;

use crate::ids::{Ids, Scan};
use crate::memory;
use crate::report::{self, Inserted, Read};

/// Every u64 is a valid key.
pub const MAX_ID: u64 = u64::MAX;

type Map = BTreeMap<u64, String>;

/// Bytes of the length prefix before the encoded map.
const LEN_PREFIX: u64 = 8;

thread_local! {
    static MAP: RefCell<Map> = const { RefCell::new(BTreeMap::new()) };
}

// The values are on the heap already: a lookup decodes nothing.
crate::btree::map_store_fns!(
    pub new |payload| payload.to_owned(),
    len |value| value.len(),
    scan |map, scan| map.range(scan.offset..).map(|(_, v)| v)
);

pub fn len() -> u64 {
    MAP.with_borrow(|map| map.len() as u64)
}

/// Empties the map; returns the number of rows removed. The allocator keeps the freed
/// memory: the Wasm heap never shrinks.
pub fn clear() -> u64 {
    MAP.with_borrow_mut(|map| {
        let removed = map.len() as u64;
        map.clear();
        removed
    })
}

/// `pre_upgrade`: writes the map, encoded with `encoding`, to the upgrade memory; returns
/// the encoded bytes. An empty map writes a zero length, or nothing at all when the memory
/// was never used (size 0 reads back as an empty map), so a canister that never used the
/// heap store does not allocate a bucket of stable memory to it at every upgrade.
/// Traps if stable memory cannot grow: the upgrade then fails and rolls back, data intact.
pub fn save(encoding: HeapEncoding) -> u64 {
    MAP.with_borrow(|map| {
        let mut memory = memory::get(memory::HEAP_UPGRADE);
        if map.is_empty() && memory.size() == 0 {
            return 0;
        }
        let bytes = if map.is_empty() {
            Vec::new()
        } else {
            encode(map, encoding)
        };
        let len = bytes.len() as u64;
        let mut writer = Writer::new(&mut memory, 0);
        if writer
            .write(&len.to_le_bytes())
            .and_then(|()| writer.write(&bytes))
            .is_err()
        {
            ic_cdk::trap(format!(
                "pre_upgrade: stable memory cannot grow to hold the heap map's {len} encoded bytes"
            ));
        }
        len
    })
}

/// `post_upgrade`: the map `save` wrote, decoded with `encoding` (the one `save` used).
/// Traps on bytes that do not decode, so the upgrade fails and the old module keeps the data.
pub fn restore(encoding: HeapEncoding) {
    let memory = memory::get(memory::HEAP_UPGRADE);
    if memory.size() == 0 {
        return;
    }
    let mut prefix = [0u8; LEN_PREFIX as usize];
    memory.read(0, &mut prefix);
    let len = u64::from_le_bytes(prefix);
    if len == 0 {
        return;
    }
    let stored = memory.size() * 65_536 - LEN_PREFIX;
    let Some(len) = usize::try_from(len).ok().filter(|&l| l as u64 <= stored) else {
        ic_cdk::trap(format!(
            "post_upgrade: the heap map's record says {len} bytes but its memory holds {stored}"
        ));
    };
    let mut bytes = vec![0u8; len];
    memory.read(LEN_PREFIX, &mut bytes);
    let map = decode(&bytes, encoding).unwrap_or_else(|e| {
        ic_cdk::trap(format!(
            "post_upgrade: the heap map does not decode as {}: {e}",
            encoding.name()
        ))
    });
    drop(bytes);
    MAP.with_borrow_mut(|m| *m = map);
}

fn encode(map: &Map, encoding: HeapEncoding) -> Vec<u8> {
    let encoded = match encoding {
        HeapEncoding::Candid => candid::encode_one(map).map_err(|e| e.to_string()),
        HeapEncoding::Cbor => {
            let mut out = Vec::new();
            ciborium::into_writer(map, &mut out)
                .map(|()| out)
                .map_err(|e| e.to_string())
        }
    };
    encoded.unwrap_or_else(|e| {
        ic_cdk::trap(format!(
            "pre_upgrade: encoding the heap map as {} failed: {e}",
            encoding.name()
        ))
    })
}

fn decode(bytes: &[u8], encoding: HeapEncoding) -> Result<Map, String> {
    match encoding {
        HeapEncoding::Candid => candid::decode_one(bytes).map_err(|e| e.to_string()),
        HeapEncoding::Cbor => ciborium::from_reader(bytes).map_err(|e| e.to_string()),
    }
}
