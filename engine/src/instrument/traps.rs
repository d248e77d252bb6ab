//! Where the counter can be observed: which operators cannot trap (so that the local counter
//! need not be written to the global before them), and when the global may be behind at a
//! trap.

use wasmparser::Operator;

use super::Counter;
#[cfg(doc)]
use crate::cost::is_scalar_load_or_store;

/// Whether the global counter can be behind at a trap: with the local counter and without
/// the profiling probes, loads and stores ([`is_scalar_load_or_store`]) do not write the
/// counter back first. Their one trap, `MemoryOutOfBounds`, is rare and ends the message, and writing the
/// global before every segment that touches memory cost about 5% of the StableBTreeMap
/// fill's time; so the engine instead runs such a message again on the module with
/// [`Counter::Global`], whose count at every trap is the replica's.
pub fn stale_at_heap_traps(counter: Counter, profiled: bool) -> bool {
    counter == Counter::Local && !profiled
}

/// Operators that can neither trap nor leave the function nor grow memory, so that the
/// counter need not be in the global when they run ([`Counter::Local`]). Everything not
/// listed (loads, stores, division, float-to-int truncation, calls, table and bulk
/// operations, `memory.grow`, `unreachable`, SIMD) is treated as observable.
pub(super) fn cannot_trap(op: &Operator) -> bool {
    control_and_data(op) || comparison(op) || arithmetic(op) || conversion(op)
}

/// Control flow, locals, globals, constants, sizes, references and segment drops.
fn control_and_data(op: &Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::Nop
            | O::Block { .. }
            | O::Loop { .. }
            | O::If { .. }
            | O::Else
            | O::End
            | O::Br { .. }
            | O::BrIf { .. }
            | O::BrTable { .. }
            | O::Drop
            | O::Select
            | O::TypedSelect { .. }
            | O::LocalGet { .. }
            | O::LocalSet { .. }
            | O::LocalTee { .. }
            | O::GlobalGet { .. }
            | O::GlobalSet { .. }
            | O::I32Const { .. }
            | O::I64Const { .. }
            | O::F32Const { .. }
            | O::F64Const { .. }
            | O::MemorySize { .. }
            | O::TableSize { .. }
            | O::RefNull { .. }
            | O::RefIsNull
            | O::RefFunc { .. }
            | O::DataDrop { .. }
            | O::ElemDrop { .. }
    )
}

/// Comparisons.
fn comparison(op: &Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::I32Eqz
            | O::I32Eq
            | O::I32Ne
            | O::I32LtS
            | O::I32LtU
            | O::I32GtS
            | O::I32GtU
            | O::I32LeS
            | O::I32LeU
            | O::I32GeS
            | O::I32GeU
            | O::I64Eqz
            | O::I64Eq
            | O::I64Ne
            | O::I64LtS
            | O::I64LtU
            | O::I64GtS
            | O::I64GtU
            | O::I64LeS
            | O::I64LeU
            | O::I64GeS
            | O::I64GeU
            | O::F32Eq
            | O::F32Ne
            | O::F32Lt
            | O::F32Gt
            | O::F32Le
            | O::F32Ge
            | O::F64Eq
            | O::F64Ne
            | O::F64Lt
            | O::F64Gt
            | O::F64Le
            | O::F64Ge
    )
}

/// Integer arithmetic other than division and remainder, and float arithmetic.
fn arithmetic(op: &Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::I32Clz
            | O::I32Ctz
            | O::I32Popcnt
            | O::I32Add
            | O::I32Sub
            | O::I32Mul
            | O::I32And
            | O::I32Or
            | O::I32Xor
            | O::I32Shl
            | O::I32ShrS
            | O::I32ShrU
            | O::I32Rotl
            | O::I32Rotr
            | O::I64Clz
            | O::I64Ctz
            | O::I64Popcnt
            | O::I64Add
            | O::I64Sub
            | O::I64Mul
            | O::I64And
            | O::I64Or
            | O::I64Xor
            | O::I64Shl
            | O::I64ShrS
            | O::I64ShrU
            | O::I64Rotl
            | O::I64Rotr
            | O::F32Abs
            | O::F32Neg
            | O::F32Ceil
            | O::F32Floor
            | O::F32Trunc
            | O::F32Nearest
            | O::F32Sqrt
            | O::F32Add
            | O::F32Sub
            | O::F32Mul
            | O::F32Div
            | O::F32Min
            | O::F32Max
            | O::F32Copysign
            | O::F64Abs
            | O::F64Neg
            | O::F64Ceil
            | O::F64Floor
            | O::F64Trunc
            | O::F64Nearest
            | O::F64Sqrt
            | O::F64Add
            | O::F64Sub
            | O::F64Mul
            | O::F64Div
            | O::F64Min
            | O::F64Max
            | O::F64Copysign
    )
}

/// Conversions that cannot trap (the saturating float-to-int ones among them).
fn conversion(op: &Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::I32WrapI64
            | O::I64ExtendI32S
            | O::I64ExtendI32U
            | O::F32ConvertI32S
            | O::F32ConvertI32U
            | O::F32ConvertI64S
            | O::F32ConvertI64U
            | O::F32DemoteF64
            | O::F64ConvertI32S
            | O::F64ConvertI32U
            | O::F64ConvertI64S
            | O::F64ConvertI64U
            | O::F64PromoteF32
            | O::I32ReinterpretF32
            | O::I64ReinterpretF64
            | O::F32ReinterpretI32
            | O::F64ReinterpretI64
            | O::I32Extend8S
            | O::I32Extend16S
            | O::I64Extend8S
            | O::I64Extend16S
            | O::I64Extend32S
            | O::I32TruncSatF32S
            | O::I32TruncSatF32U
            | O::I32TruncSatF64S
            | O::I32TruncSatF64U
            | O::I64TruncSatF32S
            | O::I64TruncSatF32U
            | O::I64TruncSatF64S
            | O::I64TruncSatF64U
    )
}
