//! Heap marks: the memory tracker's first touches found by the module itself. The replica
//! protects the heap and counts a Wasm page at the fault of its first access (and again at
//! the first write); a signal, an `mprotect` and a page fault per page cost the host far more
//! than the canister's code that touched it. Where the module allows it (see
//! [`Instrumented::heap_marks`](super::Instrumented::heap_marks)), every load, store and bulk
//! operation on the heap first reads one byte per 4 KiB page in [`HEAP_MARKS_EXPORT`], and
//! calls the host ([`HEAP_TOUCH_IMPORT`] with the range) only when the page lacks the mark it
//! needs: the host
//! then counts, keeps the old bytes and sets the marks, as its fault handler would, and the
//! heap stays readable and writable throughout. The checks are not metered (the replica has
//! no such code): every count is the kernel's, at the same instruction.

use wasm_encoder::{BlockType, InstructionSink, MemArg, ValType};
use wasmparser::Operator;

use crate::cost::is_simd_load_or_store;

/// One byte per 4 KiB heap page, then a byte per data segment ([`DROPPED_SEGMENTS`]).
pub const HEAP_MARKS_EXPORT: &str = "__icbench heap marks";
/// `(import "__" "heap_touch" (func (param $start i64) (param $length i64) (param $kind i32)
/// (param $source i64)))`: [`TOUCH_READ`], [`TOUCH_WRITE`] or [`TOUCH_COPY`] of the range;
/// a copy's source starts at `$source` (0 otherwise).
pub const HEAP_TOUCH_IMPORT: &str = "heap_touch";
/// A page's mark: its Wasm page was accessed in this message (set on all 16 of its pages).
pub const MARK_ACCESSED: u8 = 1;
/// A page's mark: the 4 KiB page was written in this message (its old bytes are kept).
/// Always beside [`MARK_ACCESSED`]: a page's mark is 0, 1 or 3.
pub const MARK_WRITTEN: u8 = 2;
/// One byte per data segment, past a mark for every page a 32-bit address plus a 32-bit
/// offset can reach (2^33 bytes): 1 once `data.drop` dropped it (a `memory.init` of it then
/// traps unless empty). A 64-bit heap's page numbers wrap at 2^32: an address past the
/// largest heap traps anyway, whatever mark its wrapped page has.
pub const DROPPED_SEGMENTS: u64 = 1 << 21;
/// The most data segments a module with heap marks may have.
pub(super) const MAX_SEGMENTS: u64 = 1 << 16;
pub const TOUCH_READ: i32 = 0;
pub const TOUCH_WRITE: i32 = 1;
/// `memory.copy`: the source read and the destination written, neither if either range is
/// out of bounds (the copy traps before it touches anything).
pub const TOUCH_COPY: i32 = 2;
/// The marks memory's size in Wasm pages: the marks and a page of segments.
const MARKS_MEMORY_PAGES: u64 = (DROPPED_SEGMENTS >> 16) + 1;

/// Whether the module's code touches the heap only in ways the marks cover: scalar loads
/// and stores, `memory.copy`, `memory.fill` and `memory.init`. Anything else (SIMD loads and
/// stores) leaves the module to the kernel's faults.
pub(super) fn covered(op: &Operator) -> bool {
    !is_simd_load_or_store(op) && !matches!(op, Operator::MemoryDiscard { .. })
}

pub(super) fn add_heap_marks_memory(memories: &mut wasm_encoder::MemorySection) {
    memories.memory(wasm_encoder::MemoryType {
        minimum: MARKS_MEMORY_PAGES,
        maximum: Some(MARKS_MEMORY_PAGES),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
}

/// A bulk operation on the heap, and for `memory.init` its segment and the segment's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bulk {
    Copy,
    Fill,
    Init { segment: u32, length: u64 },
}

/// A scalar heap access: its static offset, its width in bytes, whether it writes, and the
/// type of the value a store takes.
pub(super) struct Access {
    offset: u64,
    bytes: u64,
    store: Option<ValType>,
}

pub(super) fn scalar_access(op: &Operator) -> Option<Access> {
    use Operator::*;
    let (memarg, bytes, store) = match *op {
        I32Load8S { memarg }
        | I32Load8U { memarg }
        | I64Load8S { memarg }
        | I64Load8U { memarg } => (memarg, 1, None),
        I32Load16S { memarg }
        | I32Load16U { memarg }
        | I64Load16S { memarg }
        | I64Load16U { memarg } => (memarg, 2, None),
        I32Load { memarg } | F32Load { memarg } | I64Load32S { memarg } | I64Load32U { memarg } => {
            (memarg, 4, None)
        }
        I64Load { memarg } | F64Load { memarg } => (memarg, 8, None),
        I32Store8 { memarg } => (memarg, 1, Some(ValType::I32)),
        I64Store8 { memarg } => (memarg, 1, Some(ValType::I64)),
        I32Store16 { memarg } => (memarg, 2, Some(ValType::I32)),
        I64Store16 { memarg } => (memarg, 2, Some(ValType::I64)),
        I32Store { memarg } => (memarg, 4, Some(ValType::I32)),
        I64Store32 { memarg } => (memarg, 4, Some(ValType::I64)),
        F32Store { memarg } => (memarg, 4, Some(ValType::F32)),
        I64Store { memarg } => (memarg, 8, Some(ValType::I64)),
        F64Store { memarg } => (memarg, 8, Some(ValType::F64)),
        _ => return None,
    };
    Some(Access {
        offset: memarg.offset,
        bytes,
        store,
    })
}

/// The scratch locals of the checks in one body: an address of the heap's type, the
/// effective address (i64), one value local per type a store or bulk operation sets aside,
/// and a bulk operation's destination as i64.
#[derive(Clone, Copy, Debug)]
pub(super) struct MarkLocals {
    pub(super) address: u32,
    pub(super) effective: u32,
    pub(super) i32: u32,
    pub(super) i64: u32,
    pub(super) f32: u32,
    pub(super) f64: u32,
    pub(super) wide: u32,
}

impl MarkLocals {
    /// The locals' declarations, from local `first` on, in the order of the fields.
    pub(super) fn declare(first: u32, heap64: bool) -> (MarkLocals, [ValType; 7]) {
        let address = if heap64 { ValType::I64 } else { ValType::I32 };
        let locals = MarkLocals {
            address: first,
            effective: first + 1,
            i32: first + 2,
            i64: first + 3,
            f32: first + 4,
            f64: first + 5,
            wide: first + 6,
        };
        let types = [
            address,
            ValType::I64,
            ValType::I32,
            ValType::I64,
            ValType::F32,
            ValType::F64,
            ValType::I64,
        ];
        (locals, types)
    }

    fn value(&self, ty: ValType) -> u32 {
        match ty {
            ValType::I32 => self.i32,
            ValType::I64 => self.i64,
            ValType::F32 => self.f32,
            ValType::F64 => self.f64,
            other => unreachable!("no store takes a {other:?}"),
        }
    }
}

/// Where the checks find what they need.
#[derive(Clone, Copy, Debug)]
pub(super) struct Marks {
    pub(super) memory: u32,
    pub(super) touch: u32,
    pub(super) heap64: bool,
}

impl Marks {
    fn mark_arg(&self) -> MemArg {
        MemArg {
            offset: 0,
            align: 0,
            memory_index: self.memory,
        }
    }

    /// Before the scalar access `access`, with its address (and a store's value) on the
    /// stack: checks its page's mark and leaves the stack as it was.
    pub(super) fn scalar(&self, sink: &mut InstructionSink<'_>, l: &MarkLocals, access: &Access) {
        if let Some(ty) = access.store {
            sink.local_set(l.value(ty));
        }
        sink.local_tee(l.address);
        if !self.heap64 {
            sink.i64_extend_i32_u();
        }
        if access.offset != 0 {
            sink.i64_const(access.offset as i64).i64_add();
        }
        // Slow path: the page lacks the mark, or the access runs into the next page (a
        // byte cannot). A written page is an accessed one too, so a load needs any mark
        // and a store both.
        sink.local_tee(l.effective)
            .i64_const(12)
            .i64_shr_u()
            .i32_wrap_i64()
            .i32_load8_u(self.mark_arg());
        let kind = match access.store {
            Some(_) => {
                sink.i32_const((MARK_ACCESSED | MARK_WRITTEN) as i32)
                    .i32_ne();
                TOUCH_WRITE
            }
            None => {
                sink.i32_eqz();
                TOUCH_READ
            }
        };
        if access.bytes > 1 {
            sink.local_get(l.effective)
                .i32_wrap_i64()
                .i32_const(4095)
                .i32_and()
                .i32_const(4096 - access.bytes as i32)
                .i32_gt_u()
                .i32_or();
        }
        sink.if_(BlockType::Empty);
        self.call_touch(
            sink,
            |s| {
                s.local_get(l.effective);
            },
            |s| {
                s.i64_const(access.bytes as i64);
            },
            kind,
            None,
        );
        sink.end().local_get(l.address);
        if let Some(ty) = access.store {
            sink.local_get(l.value(ty));
        }
    }

    /// Pushes 1 if every 4 KiB page of the `length` bytes from `start` (i64 locals; at most
    /// 4 KiB, so the first and the last page) has mark `need`, or there are no bytes; else 0.
    fn range_marked(&self, sink: &mut InstructionSink<'_>, start: u32, length: u32, need: u8) {
        let page = |sink: &mut InstructionSink<'_>| {
            sink.i64_const(12)
                .i64_shr_u()
                .i32_wrap_i64()
                .i32_load8_u(self.mark_arg());
        };
        sink.local_get(length)
            .i64_eqz()
            .if_(BlockType::Result(ValType::I32))
            .i32_const(1)
            .else_()
            .local_get(length)
            .i64_const(4096)
            .i64_le_u()
            .if_(BlockType::Result(ValType::I32))
            .local_get(start);
        page(sink);
        sink.local_get(start)
            .local_get(length)
            .i64_add()
            .i64_const(1)
            .i64_sub();
        page(sink);
        sink.i32_and()
            .i32_const(need as i32)
            .i32_and()
            .else_()
            .i32_const(0)
            .end()
            .end();
    }

    /// Before `memory.copy`, `memory.fill` or `memory.init` (`Bulk`), with its three
    /// operands on the stack: checks the marks of its ranges (a copy's source read, the
    /// destination written), calls the host when they lack them (it checks the ranges
    /// against the heap) and leaves the stack as it was.
    pub(super) fn bulk(&self, sink: &mut InstructionSink<'_>, l: &MarkLocals, bulk: Bulk) {
        // The length as i64 (`memory.init`'s is an i32), a copy's source as i64, a fill's
        // value or an init's segment offset (i32), the destination (the heap's type).
        let narrow_length = !self.heap64 || matches!(bulk, Bulk::Init { .. });
        if narrow_length {
            sink.i64_extend_i32_u();
        }
        sink.local_set(l.effective);
        if bulk == Bulk::Copy {
            if !self.heap64 {
                sink.i64_extend_i32_u();
            }
            sink.local_set(l.i64);
        } else {
            sink.local_set(l.i32);
        }
        sink.local_set(l.address);
        // The destination as i64.
        let destination = if self.heap64 { l.address } else { l.wide };
        if !self.heap64 {
            sink.local_get(l.address)
                .i64_extend_i32_u()
                .local_set(destination);
        }
        if let Bulk::Init { segment, length } = bulk {
            // A range past the segment (or a dropped one) traps before anything is written.
            sink.local_get(l.i32)
                .i64_extend_i32_u()
                .local_get(l.effective)
                .i64_add()
                .i32_const(0)
                .i32_load8_u(self.dropped(segment))
                .if_(BlockType::Result(ValType::I64))
                .i64_const(0)
                .else_()
                .i64_const(length as i64)
                .end()
                .i64_le_u()
                .if_(BlockType::Empty);
        }
        self.range_marked(sink, destination, l.effective, MARK_WRITTEN);
        if bulk == Bulk::Copy {
            self.range_marked(sink, l.i64, l.effective, MARK_ACCESSED);
            sink.i32_and();
        }
        sink.i32_eqz().if_(BlockType::Empty);
        let kind = if bulk == Bulk::Copy {
            TOUCH_COPY
        } else {
            TOUCH_WRITE
        };
        let source = |s: &mut InstructionSink<'_>| {
            s.local_get(l.i64);
        };
        self.call_touch(
            sink,
            |s| {
                s.local_get(destination);
            },
            |s| {
                s.local_get(l.effective);
            },
            kind,
            (bulk == Bulk::Copy).then_some(&source as &dyn Fn(&mut InstructionSink<'_>)),
        );
        sink.end();
        if matches!(bulk, Bulk::Init { .. }) {
            sink.end();
        }
        sink.local_get(l.address);
        if bulk == Bulk::Copy {
            sink.local_get(l.i64);
            if !self.heap64 {
                sink.i32_wrap_i64();
            }
        } else {
            sink.local_get(l.i32);
        }
        sink.local_get(l.effective);
        if narrow_length {
            sink.i32_wrap_i64();
        }
    }

    /// Before `data.drop`: notes the segment dropped, for the checks of `memory.init`.
    pub(super) fn drop_segment(&self, sink: &mut InstructionSink<'_>, segment: u32) {
        sink.i32_const(0)
            .i32_const(1)
            .i32_store8(self.dropped(segment));
    }

    fn dropped(&self, segment: u32) -> MemArg {
        MemArg {
            offset: DROPPED_SEGMENTS + segment as u64,
            align: 0,
            memory_index: self.memory,
        }
    }

    /// Calls the host with the range, the kind and a copy's source.
    fn call_touch(
        &self,
        sink: &mut InstructionSink<'_>,
        start: impl Fn(&mut InstructionSink<'_>),
        length: impl Fn(&mut InstructionSink<'_>),
        kind: i32,
        source: Option<&dyn Fn(&mut InstructionSink<'_>)>,
    ) {
        start(sink);
        length(sink);
        sink.i32_const(kind);
        match source {
            Some(source) => source(sink),
            None => {
                sink.i64_const(0);
            }
        }
        sink.call(self.touch);
    }
}
