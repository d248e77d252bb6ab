//! Metering's segments: the replica's `injections()`, which splits a function body into
//! metered segments, each charged its operators' cost where it starts, and marks where a bulk
//! operation's size is charged; and what the replica's own injected code adds to the
//! compilation charge.

use wasmparser::Operator;

use super::scan::ModuleInfo;
use crate::cost::instruction_cost;

/// The replica's `injections()`: one linear scan that splits the body into metered
/// segments and records where bulk operations need their dynamic charge.
pub(super) fn compute_points(info: &ModuleInfo, ops: &[Operator], points: &mut Vec<Point>) {
    let mem64 = info.mem64;
    points.clear();
    // "Start with at least one fuel being consumed because even empty functions should
    // consume at least some fuel."
    let mut position = 0;
    let mut scope = Scope::Reentrant;
    let mut cost = 1;
    for (i, op) in ops.iter().enumerate() {
        cost += instruction_cost(op, mem64);
        let next_scope = match op {
            Operator::Loop { .. } => Some(Scope::Reentrant),
            Operator::If { .. } => Some(Scope::NonReentrant),
            Operator::Else
            | Operator::Br { .. }
            | Operator::BrIf { .. }
            | Operator::BrTable { .. }
            | Operator::End
            | Operator::Return
            | Operator::Unreachable
            | Operator::ReturnCall { .. }
            | Operator::ReturnCallIndirect { .. } => Some(Scope::NonReentrant),
            _ => {
                if let Some(size) = bulk_size_operand(info, op) {
                    points.push(Point {
                        position: i,
                        injection: Injection::Dynamic(size),
                    });
                }
                None
            }
        };
        if let Some(next_scope) = next_scope {
            points.push(Point {
                position,
                injection: Injection::Static { scope, cost },
            });
            position = i + 1;
            scope = next_scope;
            cost = 0;
        }
    }
    // The segment after the final `end` is empty and never recorded, as in the replica.
    // A stable sort keeps a dynamic point ahead of a static one at the same position
    // (the dynamic one was pushed first), which is the replica's order too.
    points.sort_by_key(|p| p.position);
}

/// The type of the size operand of a bulk operation, `None` for other operators.
fn bulk_size_operand(info: &ModuleInfo, op: &Operator) -> Option<SizeOperand> {
    let size = |is64: bool| {
        if is64 {
            SizeOperand::I64
        } else {
            SizeOperand::I32
        }
    };
    let mem = |i: u32| info.memories64.get(i as usize).copied().unwrap_or(false);
    let table = |i: u32| info.tables64.get(i as usize).copied().unwrap_or(false);
    // The replica decides by the main memory's type for fill/copy of memories *and*
    // tables; we use the operand's real type, which is the same except for a 32-bit table
    // in a wasm64 module (where the replica's output would not validate).
    match *op {
        Operator::MemoryFill { mem: m } => Some(size(mem(m))),
        Operator::MemoryCopy { dst_mem, src_mem } => Some(size(mem(dst_mem) && mem(src_mem))),
        Operator::TableFill { table: t } => Some(size(table(t))),
        Operator::TableCopy {
            dst_table,
            src_table,
        } => Some(size(table(dst_table) && table(src_table))),
        // The length operand of `memory.init` and `table.init` is always an i32.
        Operator::MemoryInit { .. } | Operator::TableInit { .. } => Some(SizeOperand::I32),
        _ => None,
    }
}

/// Where a metered segment starts (`Scope` in the replica).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Scope {
    /// Function entry and loop bodies: charged and checked.
    Reentrant,
    /// After `if` (then-arm) and after any block end/branch: charged, never checked, and
    /// skipped when the cost is 0.
    NonReentrant,
}

/// Type of the size operand a bulk operation leaves on top of the stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SizeOperand {
    I32,
    I64,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Injection {
    Static { scope: Scope, cost: u64 },
    Dynamic(SizeOperand),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Point {
    /// Index of the operator the injection goes in front of.
    pub(super) position: usize,
    pub(super) injection: Injection,
}

/// Operators the replica's injection adds for `injection`: they count towards the install's
/// compilation charge whatever code we generate ourselves.
pub(super) fn replica_injected_ops(injection: Injection) -> u64 {
    match injection {
        Injection::Static {
            scope: Scope::NonReentrant,
            cost: 0,
        } => 0,
        Injection::Static {
            scope: Scope::NonReentrant,
            ..
        } => 4,
        Injection::Static {
            scope: Scope::Reentrant,
            ..
        } => 10,
        Injection::Dynamic(SizeOperand::I64) => 1,
        Injection::Dynamic(SizeOperand::I32) => 3,
    }
}
