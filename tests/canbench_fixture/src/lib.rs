//! canbench benchmarks whose instruction counts canbench records on the replica for every
//! release (canbench-bin/tests/expected): an empty bench is 207, and a bench whose body is
//! one raw `stable64_grow(123)` is 307 with 123 pages of stable memory increase.

use canbench_rs::bench;

#[link(wasm_import_module = "ic0")]
extern "C" {
    fn stable64_grow(new_pages: u64) -> u64;
}

#[bench]
fn empty() {}

#[bench]
fn stable_memory_increase_from_zero() {
    unsafe { stable64_grow(123) };
}
