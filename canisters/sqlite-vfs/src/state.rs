//! What outlives a message on the heap: the persisted settings as last read from (or
//! written to) the database's `icbench_settings` table, and the row payload built from them.

use std::cell::{Cell, RefCell};

use crate::settings::Settings;

/// Payload bytes per row unless `set_payload_size` says otherwise (the bench canister's).
pub const DEFAULT_PAYLOAD_SIZE: u64 = 100;
/// Largest payload per row: 1 MiB (the bench canister's limit).
pub const MAX_PAYLOAD_SIZE: u64 = 1 << 20;

/// The settings that live in the database, so an upgrade re-applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persisted {
    pub payload_size: u64,
    pub settings: Settings,
}

impl Default for Persisted {
    fn default() -> Self {
        Persisted {
            payload_size: DEFAULT_PAYLOAD_SIZE,
            settings: Settings::default(),
        }
    }
}

thread_local! {
    static PERSISTED: Cell<Persisted> = Cell::new(Persisted::default());
    /// The row payload, built once from `payload_size` so inserts only copy it.
    static PAYLOAD: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub fn persisted() -> Persisted {
    PERSISTED.get()
}

/// Called by the store once the database holds `value`.
pub fn set_persisted(value: Persisted) {
    if value.payload_size != PERSISTED.get().payload_size {
        PAYLOAD.with_borrow_mut(|payload| *payload = None);
    }
    PERSISTED.set(value);
}

pub fn check_payload_size(size: u64) -> Result<(), String> {
    if size > MAX_PAYLOAD_SIZE {
        return Err(format!(
            "payload size {size} exceeds the maximum of {MAX_PAYLOAD_SIZE} bytes (1 MiB)"
        ));
    }
    Ok(())
}

/// Runs `f` with the row payload: `payload_size` ASCII bytes (so bytes = chars).
pub fn with_payload<R>(f: impl FnOnce(&str) -> R) -> R {
    PAYLOAD.with_borrow_mut(|payload| {
        let text = payload.get_or_insert_with(|| make_payload(persisted().payload_size));
        f(text)
    })
}

/// The bench canister's payload rule (canisters/bench/src/state.rs `make_payload`): the
/// alphabet repeated, so both canisters store the same bytes per row.
fn make_payload(size: u64) -> String {
    // `size` <= MAX_PAYLOAD_SIZE, so the cast cannot truncate.
    (0..size as usize)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect()
}
