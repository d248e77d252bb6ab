//! Native stable accesses: the injected functions that answer `ic0.stable64_read` and
//! `stable64_write` from a cache of stable memory inside the module (see
//! [`STABLE_CACHE_EXPORT`]), and the memories and exports they need.

use wasm_encoder::{BlockType, Function, InstructionSink, MemArg, ValType};

use super::heap_marks::{Marks, MARK_ACCESSED, MARK_WRITTEN as HEAP_MARK_WRITTEN};
use super::scan::{ModuleInfo, WASM_PAGE};
use crate::cost::{system_api_fee, ApiFee};

/// Native stable accesses. A StableBTreeMap makes about 178 `ic0.stable64_read`/`write`
/// calls per row inserted, and a host call costs several times what the copy does. Where the
/// module allows it (see [`Instrumented::native_stable`]), calls to `stable64_read` and
/// `stable64_write` go to injected functions instead, which copy between the heap and
/// [`STABLE_CACHE_EXPORT`] when every 4 KiB page of the range is cached (a write: cached
/// and written by the host in this message), and call the host's function otherwise.
///
/// The host counts its accesses to each page in [`STABLE_MARKS_EXPORT`] and, at a page's
/// [`MARK_SEEN`]th access in a message, puts the page's bytes in the cache; it keeps cached
/// bytes equal to stable memory's, copies natively written pages back before it touches
/// them and when the message ends, and clears the marks when the next message starts. So a
/// native access touches only stable pages that the message already accessed (or wrote)
/// through the host, at least twice (the first read of an untouched page is not the
/// tracker's; the second maps its Wasm page): no limit, memory tracker charge or error can
/// arise from it, and it charges the host function's own fee. Everything else is the
/// host's, as before: the first accesses to a page, a first write, a range past the cache,
/// out of bounds (stable memory or heap), longer than [`NATIVE_ACCESS_MAX`] or without the
/// instructions for its fee.
///
/// The one difference a canister could see is when a trap happens, not whether: a native
/// access does not fold the memory tracker's pending page charges into the counter, so a
/// message those charges ran out of instructions stops at its next host call or its end
/// (see docs/engine.md, *In-band*).
///
/// Stable memory as a cache of the host's pages (fixed size, readable and writable).
pub const STABLE_CACHE_EXPORT: &str = "__icbench stable cache";
/// One byte per 4 KiB page of the cache: nonzero = marked (its cached bytes are current).
pub const STABLE_MARKS_EXPORT: &str = "__icbench stable marks";
/// An i64 global: the stable memory's size in bytes, at most [`STABLE_CACHE_BYTES`].
pub const STABLE_BYTES_EXPORT: &str = "__icbench stable bytes";
/// How much stable memory the cache covers: 8 GiB, a 10,000,000-row StableBTreeMap's
/// several times over. Pages past it are always accessed through the host.
pub const STABLE_CACHE_BYTES: u64 = 8 << 30;
/// The longest access an injected function answers (its fee cannot overflow).
const NATIVE_ACCESS_MAX: u64 = 65536;

/// The System API imports whose calls injected functions take over.
#[derive(Clone, Copy, Debug)]
pub(super) struct NativeStable {
    pub(super) read: Option<Access>,
    pub(super) write: Option<Access>,
}

/// An import taken over: its function and type index, and the fee it charges.
#[derive(Clone, Copy, Debug)]
pub(super) struct Access {
    pub(super) import: u32,
    pub(super) ty: u32,
    pub(super) fee: ApiFee,
}

pub(super) fn native_access(
    info: &ModuleInfo,
    import: Option<(u32, u32)>,
    name: &str,
) -> Option<Access> {
    let (import, ty) = import?;
    let system_api_type = info.types[ty as usize]
        .as_ref()
        .is_some_and(|t| t.params == [ValType::I64; 3] && t.results.is_empty());
    system_api_type.then_some(Access {
        import,
        ty,
        fee: system_api_fee(name)?,
    })
}

/// Memory indices of the cache and the marks: after the module's only memory.
pub(super) const CACHE_MEMORY: u32 = 1;
pub(super) const MARKS_MEMORY: u32 = 2;
/// A page's mark below [`MARK_CACHED`]: how many times the host accessed it in this
/// message. It is cached at the access after the `MARK_SEEN`th: filling a cache page costs a page fault and
/// a copy, about what 40 host calls do, and many pages are touched only a few times (SQLite
/// reading its file after opening it), while a StableBTreeMap's upper nodes are read
/// thousands of times in one message.
pub const MARK_SEEN: i32 = 16;
// Cached at a page's second host access at the earliest, when its Wasm page is mapped.
const _: () = assert!(MARK_SEEN >= 1);
/// A page's mark: its cached bytes are current, and a read may use them.
pub const MARK_CACHED: i32 = 0x40;
/// A page's mark: cached and written in this message (a write may go to the cache, which
/// then holds the page's current bytes until the host writes them back).
pub const MARK_WRITTEN: i32 = 0x41;

pub(super) fn add_native_stable_memories(memories: &mut wasm_encoder::MemorySection) {
    let cache_pages = STABLE_CACHE_BYTES / WASM_PAGE;
    let marks_pages = STABLE_CACHE_BYTES / 4096 / WASM_PAGE;
    memories.memory(wasm_encoder::MemoryType {
        minimum: cache_pages,
        maximum: Some(cache_pages),
        memory64: true,
        shared: false,
        page_size_log2: None,
    });
    memories.memory(wasm_encoder::MemoryType {
        minimum: marks_pages,
        maximum: Some(marks_pages),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
}

/// `stable64_read`: `(func (param $dst i64) (param $offset i64) (param $size i64) (param
/// $counter i64) (result i64))`, `stable64_write` the same with `$offset` and `$src` first:
/// answers the access from the cache when it can (see [`STABLE_CACHE_EXPORT`]; a write
/// needs every page marked written) and returns the counter charged with the host
/// function's fee, or calls the import with the same arguments and returns what it
/// returns. `heap64`: memory 0 is 64-bit. With heap marks, every heap page of the range
/// needs the mark the copy needs too (a read writes the heap), else the host copies and
/// counts.
pub(super) fn native_access_function(
    native: Access,
    write: bool,
    heap64: bool,
    stable_bytes: u32,
    marks: Option<Marks>,
) -> Function {
    let locals = AccessLocals::new(write);
    let mut f = Function::new([(4, ValType::I64)]);
    let mut sink = f.instructions();
    // Every check branches out of the block, to the host's function.
    sink.block(BlockType::Empty);
    locals.check_bounds(&mut sink, native.fee, heap64, stable_bytes);
    locals.check_marks(&mut sink, write);
    if let Some(marks) = marks {
        locals.check_heap_marks(&mut sink, write, marks.memory);
    }
    locals.copy(&mut sink, write, heap64);
    sink.end()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .local_get(locals.counter)
        .call(native.import)
        .end();
    f
}

/// The locals of an injected access function: its four parameters (in the order of the
/// import's, with the counter last) and four scratch ones.
struct AccessLocals {
    dst: u32,
    offset: u32,
    size: u32,
    counter: u32,
    end: u32,
    page: u32,
    last: u32,
    fee: u32,
}

impl AccessLocals {
    fn new(write: bool) -> AccessLocals {
        let (dst, offset) = if write { (1, 0) } else { (0, 1) };
        AccessLocals {
            dst,
            offset,
            size: 2,
            counter: 3,
            end: 4,
            page: 5,
            last: 6,
            fee: 7,
        }
    }

    /// Branches out unless the size, the fee and both ranges allow a native access.
    fn check_bounds(
        &self,
        sink: &mut InstructionSink<'_>,
        fee: ApiFee,
        heap64: bool,
        stable_bytes: u32,
    ) {
        let (dst, offset, size, counter, end) =
            (self.dst, self.offset, self.size, self.counter, self.end);
        // 1 <= size <= NATIVE_ACCESS_MAX
        sink.local_get(size)
            .i64_eqz()
            .br_if(0)
            .local_get(size)
            .i64_const(NATIVE_ACCESS_MAX as i64)
            .i64_gt_u()
            .br_if(0)
            // The fee, and enough instructions left for it (the host's `charge`).
            .i64_const(fee.base as i64)
            .local_get(size)
            .i64_const(fee.per_byte as i64)
            .i64_mul()
            .i64_add()
            .local_tee(self.fee)
            .local_get(counter)
            .i64_gt_s()
            .br_if(0)
            // end = offset + size, without overflow, within the stable memory (and the cache).
            .local_get(offset)
            .local_get(size)
            .i64_add()
            .local_tee(end)
            .local_get(offset)
            .i64_lt_u()
            .br_if(0)
            .local_get(end)
            .global_get(stable_bytes)
            .i64_gt_u()
            .br_if(0)
            // dst + size, without overflow, within the heap.
            .local_get(dst)
            .local_get(size)
            .i64_add()
            .local_get(dst)
            .i64_lt_u()
            .br_if(0)
            .local_get(dst)
            .local_get(size)
            .i64_add()
            .memory_size(0);
        if !heap64 {
            sink.i64_extend_i32_u();
        }
        sink.i64_const(16).i64_shl().i64_gt_u().br_if(0);
    }

    /// Branches out unless every page of the range is marked cached (a read) or written (a
    /// write).
    fn check_marks(&self, sink: &mut InstructionSink<'_>, write: bool) {
        let needed_mark = if write { MARK_WRITTEN } else { MARK_CACHED };
        let end = |sink: &mut InstructionSink<'_>| {
            sink.local_get(self.end);
        };
        self.each_page(sink, self.offset, end, MARKS_MEMORY, |sink| {
            sink.i32_const(needed_mark).i32_lt_u();
        });
    }

    /// Branches out unless every 4 KiB heap page of the range has the heap mark the copy
    /// needs: written for a read (it writes the heap), accessed for a write.
    fn check_heap_marks(&self, sink: &mut InstructionSink<'_>, write: bool, memory: u32) {
        let needed = if write {
            MARK_ACCESSED
        } else {
            HEAP_MARK_WRITTEN
        };
        let end = |sink: &mut InstructionSink<'_>| {
            sink.local_get(self.dst).local_get(self.size).i64_add();
        };
        self.each_page(sink, self.dst, end, memory, |sink| {
            sink.i32_const(needed as i32).i32_and().i32_eqz();
        });
    }

    /// Branches out of the block around the loop when `lacks` (the page's mark on the stack,
    /// leaving an i32) is true for any 4 KiB page from local `start` to the byte before `end`
    /// (which pushes it) in marks memory `memory`.
    fn each_page(
        &self,
        sink: &mut InstructionSink<'_>,
        start: u32,
        end: impl Fn(&mut InstructionSink<'_>),
        memory: u32,
        lacks: impl Fn(&mut InstructionSink<'_>),
    ) {
        let marks = MemArg {
            offset: 0,
            align: 0,
            memory_index: memory,
        };
        let (page, last) = (self.page, self.last);
        sink.local_get(start)
            .i64_const(12)
            .i64_shr_u()
            .local_set(page);
        end(sink);
        sink.i64_const(1)
            .i64_sub()
            .i64_const(12)
            .i64_shr_u()
            .local_set(last)
            .loop_(BlockType::Empty)
            .local_get(page)
            .i32_wrap_i64()
            .i32_load8_u(marks);
        lacks(sink);
        sink.br_if(1)
            .local_get(page)
            .i64_const(1)
            .i64_add()
            .local_tee(page)
            .local_get(last)
            .i64_le_u()
            .br_if(0)
            .end();
    }

    /// The copy between the heap and the cache, and the return of the charged counter.
    fn copy(&self, sink: &mut InstructionSink<'_>, write: bool, heap64: bool) {
        // Destination, source and length (in the narrower address type).
        let heap_address = |sink: &mut InstructionSink<'_>| {
            sink.local_get(self.dst);
            if !heap64 {
                sink.i32_wrap_i64();
            }
        };
        let (to, from) = if write {
            (CACHE_MEMORY, 0)
        } else {
            (0, CACHE_MEMORY)
        };
        let addresses = |sink: &mut InstructionSink<'_>| {
            if write {
                sink.local_get(self.offset);
                heap_address(sink);
            } else {
                heap_address(sink);
                sink.local_get(self.offset);
            }
        };
        // 4 and 8 bytes (a StableBTreeMap's lengths, addresses and u64 keys) as one load and
        // store: `memory.copy` is a call out of the compiled code.
        let arg = |memory_index| MemArg {
            offset: 0,
            align: 0,
            memory_index,
        };
        for (bytes, wide) in [(8, true), (4, false)] {
            sink.local_get(self.size)
                .i64_const(bytes)
                .i64_eq()
                .if_(BlockType::Empty);
            addresses(sink);
            if wide {
                sink.i64_load(arg(from)).i64_store(arg(to));
            } else {
                sink.i32_load(arg(from)).i32_store(arg(to));
            }
            self.return_charged(sink).end();
        }
        addresses(sink);
        sink.local_get(self.size);
        if !heap64 {
            sink.i32_wrap_i64();
        }
        sink.memory_copy(to, from);
        self.return_charged(sink);
    }

    /// Returns the counter less the fee.
    fn return_charged<'s, 'o>(
        &self,
        sink: &'s mut InstructionSink<'o>,
    ) -> &'s mut InstructionSink<'o> {
        sink.local_get(self.counter)
            .local_get(self.fee)
            .i64_sub()
            .return_()
    }
}
