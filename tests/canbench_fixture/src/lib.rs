//! canbench benchmarks for the `icbench canbench` runner and the engine's baselines.
//!
//! Two have instruction counts canbench records on the replica for every release
//! (canbench-bin/tests/expected): an empty bench is 207, and a bench whose measured body is
//! one raw `stable64_grow` is 307 (123 pages from zero, or 456 after a raw bench's own
//! setup grew 123). The others are built so that their page counts and scope calls are
//! exact, and so that the init argument and a loaded stable memory file show up in the
//! result.

use std::cell::RefCell;

use canbench_rs::{bench, bench_fn, bench_scope, BenchResult, Measurement};

#[link(wasm_import_module = "ic0")]
extern "C" {
    fn stable64_grow(new_pages: u64) -> u64;
}

thread_local! {
    /// The raw install argument, kept by `canister_init`.
    static INIT_ARG: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Hand-written so that any bytes (including none) are accepted: the runner passes the
/// init argument verbatim. A non-empty argument is also written at stable offset 0, so
/// that a stable memory file loaded after install visibly replaces it.
#[export_name = "canister_init"]
extern "C" fn canister_init() {
    let arg = ic_cdk::api::msg_arg_data();
    if !arg.is_empty() {
        ic_cdk::api::stable_grow(1);
        ic_cdk::api::stable_write(0, &arg);
    }
    INIT_ARG.with(|a| *a.borrow_mut() = arg);
}

#[bench]
fn empty() {}

#[bench]
fn stable_memory_increase_from_zero() {
    unsafe { stable64_grow(123) };
}

/// canbench's `stable_memory_only_increase`: setup outside `bench_fn` is not measured.
#[bench(raw)]
fn raw_stable_after_setup() -> BenchResult {
    unsafe { stable64_grow(123) };
    bench_fn(|| unsafe {
        stable64_grow(456);
    })
}

/// Grows the Wasm memory directly, so the allocator cannot round the count.
#[bench]
fn heap_increase() {
    core::arch::wasm32::memory_grow(0, 62);
}

#[bench]
fn scopes() {
    {
        let _s = bench_scope("scope_1");
        std::hint::black_box(fib(15));
    }
    {
        let _s = bench_scope("scope_2");
        std::hint::black_box(fib(10));
    }
}

#[bench]
fn repeated_scope() {
    for i in 0..10 {
        let _s = bench_scope("scope_1");
        std::hint::black_box(fib(5 + i % 2));
    }
}

/// The same name nested: instructions are merged, page increases are summed per record.
#[bench]
fn nested_same_scope() {
    let _outer = bench_scope("nested");
    {
        let _inner = bench_scope("nested");
        core::arch::wasm32::memory_grow(0, 1);
    }
}

/// The stable memory increase is the init argument's length in pages.
#[bench(raw)]
fn init_arg_pages() -> BenchResult {
    let len = INIT_ARG.with(|a| a.borrow().len() as u64);
    bench_fn(|| unsafe {
        stable64_grow(len);
    })
}

/// Reports what stable memory holds after install instead of a measurement: the size in
/// pages, and the first 8 bytes (little-endian) as the instruction count.
#[bench(raw)]
fn stable_probe() -> BenchResult {
    let size = ic_cdk::api::stable_size();
    let mut head = [0u8; 8];
    if size > 0 {
        ic_cdk::api::stable_read(0, &mut head);
    }
    BenchResult {
        total: Measurement {
            calls: 1,
            instructions: u64::from_le_bytes(head),
            heap_increase: 0,
            stable_memory_increase: size,
        },
        scopes: Default::default(),
    }
}

/// Traps when installed with the init argument `trap`, to test a failing bench.
#[bench]
fn trap_on_request() {
    if INIT_ARG.with(|a| a.borrow().as_slice() == b"trap") {
        ic_cdk::trap("trap requested by the init argument");
    }
}

fn fib(n: u32) -> u64 {
    if n < 2 {
        n as u64
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

/// Touches memory nothing before its measurement touched, for the deterministic memory
/// tracker (replica vintage 2026-07): two new Wasm pages of heap, one byte stored in each,
/// and a new page of stable memory, one byte read from it. A bench is a query, charged for
/// access only: 3 x 80,000 more than before the tracker, and heap_increase 2 either way.
#[bench]
fn touch_new_pages() {
    let first = core::arch::wasm32::memory_grow(0, 2) * 65536;
    // SAFETY: both bytes lie in the two pages just grown, which nothing else uses.
    unsafe {
        core::ptr::write_volatile(first as *mut u8, 1);
        core::ptr::write_volatile((first + 65536) as *mut u8, 1);
    }
    let start = unsafe { stable64_grow(1) };
    let mut byte = [0u8; 1];
    ic_cdk::api::stable_read(start * 65536, &mut byte);
    core::hint::black_box(byte);
}

/// Pages first touched inside scopes, for the per-scope page columns: two new heap pages
/// are written before any scope (A) and inside the outer scope (B), a third (C) and a new
/// stable page (read) inside the inner scope, nested in the outer one. Page A is written
/// again inside the outer scope: touched before it, it is not the scope's.
#[bench]
fn scope_pages() {
    let a = core::arch::wasm32::memory_grow(0, 3) * 65536;
    let (b, c) = (a + 65536, a + 2 * 65536);
    let stable = unsafe { stable64_grow(1) } * 65536;
    // SAFETY: the three pages were just grown and nothing else uses them.
    unsafe { core::ptr::write_volatile(a as *mut u8, 1) };
    let _outer = bench_scope("outer");
    unsafe {
        core::ptr::write_volatile(a as *mut u8, 2);
        core::ptr::write_volatile(b as *mut u8, 2);
    }
    {
        let _inner = bench_scope("inner");
        unsafe { core::ptr::write_volatile(c as *mut u8, 3) };
        let mut byte = [0u8; 1];
        ic_cdk::api::stable_read(stable, &mut byte);
        core::hint::black_box(byte);
    }
}
