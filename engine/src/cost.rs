//! The IC replica's cost model, as data.
//!
//! Everything here is transcribed from `dfinity/ic` (see
//! `/work/shared/research/ic-metering.md` for the full fact sheet):
//!
//! * Operator costs: `rs/embedders/src/wasm_utils/instrumentation.rs`,
//!   `fn instruction_to_cost`, at commit `002d5530aeb1ef1ed362d7f9c3c5529b8ec1cafe`
//!   (the table is identical in the newer wirm-based version of the file).
//! * System API fees: `rs/embedders/src/wasmtime_embedder/linker.rs` at commit
//!   `0048d8c4f88100022f8d9c65bafae7755f45cd6e` together with the `overhead::*`
//!   constants of `system_api_complexity.rs`.
//! * Stable memory charges: `rs/embedders/src/wasm_utils/system_api_replacements.rs`
//!   at commit `0c3226cfc2aee4dab2ae34297ef637f6bc223418`.
//! * Limits: `rs/config/src/subnet_config.rs` and `rs/config/src/embedders.rs` at
//!   commit `002d5530aeb1ef1ed362d7f9c3c5529b8ec1cafe`; the "Benchmarking" profile from
//!   `rs/pocket_ic_server/src/pocket_ic.rs`.
//! * Cycles: `CyclesAccountManagerConfig::application_subnet()` in
//!   `rs/config/src/subnet_config.rs` at commit `002d5530…`.
//!
//! The numbers are only ever written down here; the instrumentation and the host
//! functions read them from this module. The rules that changed over time, dated by the
//! pull request that changed them, are in [`replica`] (the vintages `--replica` names).

pub mod host;
mod replica;

pub use self::host::Host;
pub use self::replica::{MemoryTracker, PocketIcRelease, Replica, POCKET_IC_RELEASES};

use wasmparser::Operator;

/// The scalar loads and stores of linear memory: one cost (by the memory's index type),
/// and out of bounds their only trap.
pub fn is_scalar_load_or_store(op: &Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        I32Load { .. }
            | I64Load { .. }
            | F32Load { .. }
            | F64Load { .. }
            | I32Load8S { .. }
            | I32Load8U { .. }
            | I32Load16S { .. }
            | I32Load16U { .. }
            | I64Load8S { .. }
            | I64Load8U { .. }
            | I64Load16S { .. }
            | I64Load16U { .. }
            | I64Load32S { .. }
            | I64Load32U { .. }
            | I32Store { .. }
            | I64Store { .. }
            | F32Store { .. }
            | F64Store { .. }
            | I32Store8 { .. }
            | I32Store16 { .. }
            | I64Store8 { .. }
            | I64Store16 { .. }
            | I64Store32 { .. }
    )
}

/// SIMD's loads and stores: priced as scalar ones, and not covered by heap marks.
pub fn is_simd_load_or_store(op: &Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        V128Load { .. }
            | V128Load8x8S { .. }
            | V128Load8x8U { .. }
            | V128Load16x4S { .. }
            | V128Load16x4U { .. }
            | V128Load32x2S { .. }
            | V128Load32x2U { .. }
            | V128Load8Splat { .. }
            | V128Load16Splat { .. }
            | V128Load32Splat { .. }
            | V128Load64Splat { .. }
            | V128Load32Zero { .. }
            | V128Load64Zero { .. }
            | V128Store { .. }
            | V128Load8Lane { .. }
            | V128Load16Lane { .. }
            | V128Load32Lane { .. }
            | V128Load64Lane { .. }
            | V128Store8Lane { .. }
            | V128Store16Lane { .. }
            | V128Store32Lane { .. }
            | V128Store64Lane { .. }
    )
}

/// Static cost of one Wasm operator, exactly as the replica's `instruction_to_cost`.
///
/// `mem64` is true when the module's (first) memory is a 64-bit memory; it only
/// changes the cost of loads and stores (1 in wasm32, 2 in wasm64).
///
/// The dynamic part of bulk-memory operations (1 per byte / element) is not
/// included; the instrumentation charges it at run time.
pub fn instruction_cost(op: &Operator, mem64: bool) -> u64 {
    use Operator::*;
    let load_store = if mem64 { 2 } else { 1 };
    match op {
        // ---- control ----------------------------------------------------------
        Block { .. } | Loop { .. } | Else | End => 0,
        If { .. } | Br { .. } | BrIf { .. } | BrTable { .. } => 2,
        Return | Drop | Unreachable | Nop => 1,
        Call { .. } => 5,
        CallIndirect { .. } => 10,
        ReturnCall { .. } => 3,
        ReturnCallIndirect { .. } => 60,

        // ---- constants, locals, globals, select -------------------------------
        I32Const { .. } | I64Const { .. } | F32Const { .. } | F64Const { .. } => 1,
        LocalGet { .. } | LocalSet { .. } | LocalTee { .. } | Select => 1,
        GlobalGet { .. } | GlobalSet { .. } => 2,

        // ---- integer arithmetic ------------------------------------------------
        I32Add | I32Sub | I32Mul | I32And | I32Or | I32Xor | I32Shl | I32ShrS | I32ShrU
        | I32Rotl | I32Rotr | I64Add | I64Sub | I64Mul | I64And | I64Or | I64Xor | I64Shl
        | I64ShrS | I64ShrU | I64Rotl | I64Rotr => 1,
        I32DivS | I32DivU | I32RemS | I32RemU | I64DivS | I64DivU | I64RemS | I64RemU => 10,
        I32Clz | I32Ctz | I32Popcnt | I64Clz | I64Ctz | I64Popcnt => 1,

        // ---- integer comparisons ------------------------------------------------
        I32Eqz | I32Eq | I32Ne | I32LtS | I32LtU | I32GtS | I32GtU | I32LeS | I32LeU | I32GeS
        | I32GeU | I64Eqz | I64Eq | I64Ne | I64LtS | I64LtU | I64GtS | I64GtU | I64LeS | I64LeU
        | I64GeS | I64GeU => 1,

        // ---- floating point -----------------------------------------------------
        F32Abs | F32Neg | F64Abs | F64Neg => 1,
        F32Add | F32Sub | F32Mul | F32Ceil | F32Floor | F32Trunc | F32Nearest | F64Add | F64Sub
        | F64Mul | F64Ceil | F64Floor | F64Trunc | F64Nearest => 2,
        F32Div => 3,
        F64Div => 5,
        F32Min | F32Max | F64Min | F64Max => 18,
        F32Copysign => 2,
        F64Copysign => 3,
        F32Sqrt => 5,
        F64Sqrt => 8,
        F32Eq | F32Ne | F32Lt | F32Gt | F32Le | F32Ge | F64Eq | F64Ne | F64Lt | F64Gt | F64Le
        | F64Ge => 3,

        // ---- conversions ----------------------------------------------------------
        I32WrapI64 | I32Extend8S | I32Extend16S | I64Extend8S | I64Extend16S | I64Extend32S
        | F64ReinterpretI64 | I64ReinterpretF64 | I32ReinterpretF32 | F32ReinterpretI32
        | I64ExtendI32S | I64ExtendI32U => 1,
        F32ConvertI32S | F32ConvertI64S | F64ConvertI32S | F64ConvertI64S => 3,
        F32ConvertI32U | F32ConvertI64U | F64ConvertI32U | F64ConvertI64U => 16,
        I32TruncF32S | I32TruncF32U | I32TruncF64S | I32TruncF64U | I64TruncF32S | I64TruncF32U
        | I64TruncF64S | I64TruncF64U => 20,
        I32TruncSatF32S | I32TruncSatF32U | I32TruncSatF64S | I32TruncSatF64U | I64TruncSatF32S
        | I64TruncSatF32U | I64TruncSatF64S | I64TruncSatF64U => 20,
        F32DemoteF64 | F64PromoteF32 => 1,

        // ---- memory ------------------------------------------------------------------
        _ if is_scalar_load_or_store(op) => load_store,
        MemoryGrow { .. } | TableGrow { .. } => 300,
        MemorySize { .. } => 20,
        TableSize { .. } => 100,
        // Static part only; the size operand is charged at run time (1 per byte/element).
        MemoryFill { .. }
        | MemoryCopy { .. }
        | MemoryInit { .. }
        | TableFill { .. }
        | TableCopy { .. }
        | TableInit { .. } => 100,
        DataDrop { .. } | ElemDrop { .. } => 300,

        // ---- tables and references ----------------------------------------------------
        TableGet { .. } | TableSet { .. } => 5,
        RefNull { .. } => 1,
        RefIsNull => 5,
        RefFunc { .. } => 130,

        // ---- SIMD: loads and stores ------------------------------------------------------
        op if is_simd_load_or_store(op) => load_store,

        // ---- SIMD: the operators that cost more than 1 (everything else SIMD costs 1) ----
        I8x16Shuffle { .. } | I8x16Popcnt | I8x16Shl | I8x16ShrS => 3,
        I8x16ShrU => 2,
        I8x16LtU | I8x16GtU | I16x8LtU | I16x8GtU | I32x4LtU | I32x4GtU => 2,
        I16x8ExtAddPairwiseI8x16U | I16x8ExtMulHighI8x16S | I16x8ExtMulHighI8x16U => 2,
        I16x8Shl | I16x8ShrS | I16x8ShrU => 2,
        I32x4ExtAddPairwiseI16x8U => 3,
        I32x4Shl | I32x4ShrS | I32x4ShrU | I32x4Mul => 2,
        I32x4ExtMulLowI16x8S
        | I32x4ExtMulHighI16x8S
        | I32x4ExtMulLowI16x8U
        | I32x4ExtMulHighI16x8U => 2,
        I64x2Shl | I64x2ShrU => 2,
        I64x2ShrS => 3,
        I64x2Mul => 4,
        F32x4Ceil | F32x4Floor | F32x4Trunc | F32x4Nearest | F32x4Abs | F32x4Neg | F32x4Add
        | F32x4Sub | F32x4Mul => 2,
        F64x2Ceil | F64x2Floor | F64x2Trunc | F64x2Nearest | F64x2Abs | F64x2Neg | F64x2Add
        | F64x2Sub | F64x2Mul => 2,
        F32x4Sqrt => 5,
        F64x2Sqrt => 14,
        F32x4Div => 10,
        F64x2Div => 12,
        F32x4Min | F32x4Max | F64x2Min => 4,
        F64x2Max => 5,
        I32x4TruncSatF32x4S => 2,
        I32x4TruncSatF32x4U | F32x4ConvertI32x4U => 4,
        I32x4TruncSatF64x2SZero => 2,
        I32x4TruncSatF64x2UZero => 3,

        // ---- default arm ---------------------------------------------------------------------
        // Typed select, the remaining SIMD operators, atomics (rejected by validation anyway)
        // and anything else the replica does not list.
        _ => 1,
    }
}

// -------------------------------------------------------------------------------------------
// System API (ic0) fees
// -------------------------------------------------------------------------------------------

/// The instruction charge of a System API call: `base + per_byte * n`, charged at the start
/// of the host call, before it does any work. `n` is the size argument the replica uses for
/// that function (e.g. the `size` of a copy, the length of an appended chunk).
///
/// The Wasm `call` operator that invokes the import costs another 5, charged by the
/// caller's metered segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiFee {
    pub base: u64,
    pub per_byte: u64,
}

impl ApiFee {
    const fn new(base: u64, per_byte: u64) -> Self {
        ApiFee { base, per_byte }
    }

    /// `base + per_byte * bytes`, saturating.
    pub fn charge(&self, bytes: u64) -> u64 {
        self.base
            .saturating_add(self.per_byte.saturating_mul(bytes))
    }
}

/// Instructions per byte for payloads that leave the sandbox (`BYTE_TRANSMISSION_COST_FACTOR`).
pub const BYTE_TRANSMISSION_COST_FACTOR: u64 = 50;

/// `ic0.performance_counter` overhead (`overhead::PERFORMANCE_COUNTER`).
pub const PERFORMANCE_COUNTER: u64 = 200;

/// `ic0.debug_print` fixed overhead (`overhead::DEBUG_PRINT`).
pub const DEBUG_PRINT_BASE: u64 = 100;
/// `ic0.trap` fixed overhead (`overhead::TRAP`); `trap` also pays 1 per byte of its message.
pub const TRAP_BASE: u64 = 500;
/// Canister logging: instructions per byte *allocated* in the log buffer.
pub const LOG_BYTE_ALLOCATION_FEE: u64 = 2;
/// Canister logging: instructions per byte *transmitted* to the log (= the transmission factor).
pub const LOG_BYTE_TRANSMISSION_FEE: u64 = BYTE_TRANSMISSION_COST_FACTOR;
/// Canister log buffer size that bounds the logging charge (`MAX_ALLOWED_CANISTER_LOG_BUFFER_SIZE`).
///
/// ⚠ Read from the 2024/25 replica tests (4 KiB); newer replicas may make the log size a
/// canister setting.
pub const LOG_BUFFER_CAPACITY: u64 = 4 * 1024;

/// Extra instructions `debug_print(len)` and `trap(len)` pay on top of their `ApiFee`, for
/// canister logging: `2 * min(len, capacity) + 50 * min(len, log_remaining)` where
/// `log_remaining` is the free space left in the canister log buffer. In addition
/// `debug_print` pays `+ len` only when debug printing is not rate limited (see
/// [`Limits::charge_debug_print_bytes`]); `trap` always pays `+ len` (its `per_byte` is 1).
pub fn logging_charge(len: u64, log_remaining: u64) -> u64 {
    LOG_BYTE_ALLOCATION_FEE * len.min(LOG_BUFFER_CAPACITY)
        + LOG_BYTE_TRANSMISSION_FEE * len.min(log_remaining)
}

/// `stable_read`/`stable64_read`: charged before copying (`overhead_native::STABLE_READ`).
pub const STABLE_READ_BASE: u64 = 20;
/// `stable_write`/`stable64_write`: charged before copying (`overhead_native::STABLE_WRITE`).
pub const STABLE_WRITE_BASE: u64 = 20;
/// Stable read/write per-byte part.
pub const STABLE_PER_BYTE: u64 = 1;
/// `stable_grow`/`stable64_grow`, charged by the internal `__.try_grow_stable_memory`.
pub const STABLE_GROW: u64 = 100;
/// `stable_size`/`stable64_size` are a native `memory.size`: no charge beyond the `call`.
pub const STABLE_SIZE: u64 = 0;
/// Instructions per newly dirtied OS page (4 KiB on Linux, see [`Host`]) on an application
/// subnet (`DEFAULT_DIRTY_PAGE_OVERHEAD`). Charged per heap page after execution (updates
/// only) and per newly written stable page inside `stable_write`.
pub const DIRTY_PAGE_OVERHEAD: u64 = 1_000;
/// The heap dirty-page charge after execution is multiplied by this for Wasm64 modules
/// (the embedder's per-instance overhead). The stable-write page charge is not: the
/// instrumentation is given the plain `dirty_page_overhead`.
pub const WASM64_DIRTY_PAGE_OVERHEAD_MULTIPLIER: u64 = 4;
/// Size of the OS page the dirty/accessed page accounting uses on Linux, the engine's own
/// tracking granularity; [`Host::os_page_size`] gives another host's.
pub const OS_PAGE_SIZE: u64 = 4096;
/// Compilation cost per Wasm instruction, charged once at install
/// (`DEFAULT_COST_TO_COMPILE_WASM_INSTRUCTION`).
pub const COST_TO_COMPILE_WASM_INSTRUCTION: u64 = 6_000;

// -------------------------------------------------------------------------------------------
// Replica vintages: the charging rules that changed over time
// -------------------------------------------------------------------------------------------

/// How much less a module compiled recently is charged: its compilation counts 1/100
/// (`DESERIALIZATION_SPEED_UP_FACTOR`, `CompilationCostHandling::CountReducedAmount`,
/// rs/execution_environment/src/execution_environment.rs, read through the search index as
/// id:9597474877).
pub const DESERIALIZATION_SPEED_UP_FACTOR: u64 = 100;

/// Instructions charged every time an execution state is created (install, reinstall,
/// upgrade, snapshot load), on top of the compilation: `CREATE_EXECUTION_STATE_BASE_COST`,
/// 20M "calibrated via benchmark", added by dfinity/ic pull request #10065 (merged
/// 2026-04-30); `Hypervisor::create_execution_state` in
/// rs/execution_environment/src/hypervisor.rs @ 4a124ae506eab43e9eb0d606b9986fc3cba5375d
/// adds `create_execution_state_base_cost` to the compilation charge. The figure itself is
/// the pull request's; a dfinity/ic system test's comment gives the same "20M base cost".
pub const CREATE_EXECUTION_STATE_BASE_COST: u64 = 20_000_000;

/// Storage cycles per second a canister with any memory pays besides its memory
/// (`base_per_second_fee`), at the reference subnet size, scaled like every fee: dfinity/ic
/// pull request #10292 "Charge a base cost per canister" (merged 2026-05-22, "10k
/// cycles/s"); `CyclesAccountManager::canister_base_cost`
/// (rs/cycles_account_manager/src/cycles_account_manager.rs, index id 58031338749) adds
/// `scale(base_per_second_fee * seconds)` to the memory's burn rate when the memory is not
/// empty. (A newer price per GiB, 317,500, is only quoted by third parties: not used.)
pub const BASE_PER_SECOND_FEE: u128 = 10_000;

/// Bytes in a Wasm page (heap and stable memory alike).
pub const WASM_PAGE_SIZE: u64 = 65_536;

/// Every ic0 function with its fee, by import name (without the `ic0.` prefix).
///
/// Notes:
/// * `call_new`: `per_byte` applies to `callee_size + method_name_size`.
/// * `debug_print` and `trap`: add [`logging_charge`]; `debug_print`'s own `+ len` is
///   conditional (see [`Limits::charge_debug_print_bytes`]) and therefore not in `per_byte`.
/// * `stable_write`/`stable64_write`: add `DIRTY_PAGE_OVERHEAD` per 4 KiB page of the
///   written range not yet dirtied in this message.
/// * `mint_cycles128` has no charge call in the linker.
/// * Not listed: `msg_caller_info_*` (only seen in a third-party quote) and
///   `controller_size/copy` (no linker entry). The internal `__.*` imports are free except
///   `__.try_grow_stable_memory` (= `STABLE_GROW`, listed under `stable_grow`).
pub const SYSTEM_API_FEES: &[(&str, ApiFee)] = &[
    // sizes and flags: 500
    ("msg_arg_data_size", ApiFee::new(500, 0)),
    ("msg_caller_size", ApiFee::new(500, 0)),
    ("msg_method_name_size", ApiFee::new(500, 0)),
    ("msg_reject_msg_size", ApiFee::new(500, 0)),
    ("canister_self_size", ApiFee::new(500, 0)),
    ("root_key_size", ApiFee::new(500, 0)),
    ("subnet_self_size", ApiFee::new(500, 0)),
    ("data_certificate_size", ApiFee::new(500, 0)),
    ("data_certificate_present", ApiFee::new(500, 0)),
    // copies into the canister: 500 + 1 per byte
    ("msg_arg_data_copy", ApiFee::new(500, 1)),
    ("msg_caller_copy", ApiFee::new(500, 1)),
    ("msg_method_name_copy", ApiFee::new(500, 1)),
    ("msg_reject_msg_copy", ApiFee::new(500, 1)),
    ("canister_self_copy", ApiFee::new(500, 1)),
    ("root_key_copy", ApiFee::new(500, 1)),
    ("subnet_self_copy", ApiFee::new(500, 1)),
    ("data_certificate_copy", ApiFee::new(500, 1)),
    ("certified_data_set", ApiFee::new(500, 1)),
    // payloads leaving the sandbox: 500 + 50 per byte
    (
        "msg_reply_data_append",
        ApiFee::new(500, BYTE_TRANSMISSION_COST_FACTOR),
    ),
    (
        "msg_reject",
        ApiFee::new(500, BYTE_TRANSMISSION_COST_FACTOR),
    ),
    (
        "call_data_append",
        ApiFee::new(500, BYTE_TRANSMISSION_COST_FACTOR),
    ),
    // inter-canister calls
    ("call_new", ApiFee::new(1_500, 1)),
    ("call_perform", ApiFee::new(5_000, 0)),
    ("call_on_cleanup", ApiFee::new(500, 0)),
    ("call_cycles_add", ApiFee::new(500, 0)),
    ("call_cycles_add128", ApiFee::new(500, 0)),
    ("call_with_best_effort_response", ApiFee::new(500, 0)),
    // message and canister state: 500
    ("msg_reply", ApiFee::new(500, 0)),
    ("msg_reject_code", ApiFee::new(500, 0)),
    ("accept_message", ApiFee::new(500, 0)),
    ("time", ApiFee::new(500, 0)),
    ("global_timer_set", ApiFee::new(500, 0)),
    ("canister_version", ApiFee::new(500, 0)),
    ("canister_status", ApiFee::new(500, 0)),
    ("in_replicated_execution", ApiFee::new(500, 0)),
    ("msg_deadline", ApiFee::new(500, 0)),
    // cycles: 500
    ("canister_cycle_balance", ApiFee::new(500, 0)),
    ("canister_cycle_balance128", ApiFee::new(500, 0)),
    ("canister_liquid_cycle_balance128", ApiFee::new(500, 0)),
    ("msg_cycles_available", ApiFee::new(500, 0)),
    ("msg_cycles_available128", ApiFee::new(500, 0)),
    ("msg_cycles_refunded", ApiFee::new(500, 0)),
    ("msg_cycles_refunded128", ApiFee::new(500, 0)),
    ("msg_cycles_accept", ApiFee::new(500, 0)),
    ("msg_cycles_accept128", ApiFee::new(500, 0)),
    ("cycles_burn128", ApiFee::new(500, 0)),
    ("mint_cycles128", ApiFee::new(0, 0)),
    // misc
    ("is_controller", ApiFee::new(1_000, 1)),
    ("performance_counter", ApiFee::new(PERFORMANCE_COUNTER, 0)),
    ("debug_print", ApiFee::new(DEBUG_PRINT_BASE, 0)),
    ("trap", ApiFee::new(TRAP_BASE, 1)),
    // cost queries
    ("cost_call", ApiFee::new(500, 0)),
    ("cost_create_canister", ApiFee::new(500, 0)),
    ("cost_http_request", ApiFee::new(500, 0)),
    ("cost_http_request_v2", ApiFee::new(10_000, 0)),
    ("cost_sign_with_ecdsa", ApiFee::new(500, 1)),
    ("cost_sign_with_schnorr", ApiFee::new(500, 1)),
    ("cost_vetkd_derive_key", ApiFee::new(500, 1)),
    // environment variables (the name argument of the *_exists/_size calls is not charged)
    ("env_var_count", ApiFee::new(500, 0)),
    ("env_var_name_size", ApiFee::new(500, 0)),
    ("env_var_name_exists", ApiFee::new(500, 0)),
    ("env_var_value_size", ApiFee::new(500, 0)),
    ("env_var_name_copy", ApiFee::new(500, 1)),
    ("env_var_value_copy", ApiFee::new(500, 1)),
    // stable memory (implemented natively in Wasm by the replica; same charges)
    ("stable_size", ApiFee::new(STABLE_SIZE, 0)),
    ("stable64_size", ApiFee::new(STABLE_SIZE, 0)),
    ("stable_grow", ApiFee::new(STABLE_GROW, 0)),
    ("stable64_grow", ApiFee::new(STABLE_GROW, 0)),
    (
        "stable_read",
        ApiFee::new(STABLE_READ_BASE, STABLE_PER_BYTE),
    ),
    (
        "stable64_read",
        ApiFee::new(STABLE_READ_BASE, STABLE_PER_BYTE),
    ),
    (
        "stable_write",
        ApiFee::new(STABLE_WRITE_BASE, STABLE_PER_BYTE),
    ),
    (
        "stable64_write",
        ApiFee::new(STABLE_WRITE_BASE, STABLE_PER_BYTE),
    ),
];

/// The fee of the ic0 function `name` (without the `ic0.` prefix), if it is a known one.
pub fn system_api_fee(name: &str) -> Option<ApiFee> {
    SYSTEM_API_FEES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, fee)| *fee)
}

// -------------------------------------------------------------------------------------------
// Limits
// -------------------------------------------------------------------------------------------

const GIB: u64 = 1 << 30;

/// `DEFAULT_WASM_MEMORY_LIMIT`: 3 GiB (fact sheet §6).
pub const DEFAULT_WASM_MEMORY_LIMIT: u64 = 3 * GIB;

/// Per-message limits of a subnet configuration. Page limits count 4 KiB OS pages (a host
/// with larger pages allows the same bytes in its own: [`Host`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Update, heartbeat and timer messages, all DTS slices together.
    pub max_instructions_per_update: u64,
    /// Query and composite-query methods (the whole call graph for composite queries).
    pub max_instructions_per_query: u64,
    /// `install_code` (init, pre/post upgrade, start).
    pub max_instructions_per_install: u64,
    /// DTS slice size for updates and install_code.
    pub max_instructions_per_slice: u64,
    /// `canister_inspect_message`.
    pub max_instructions_per_inspect_message: u64,
    pub stable_dirty_pages_update: u64,
    pub stable_accessed_pages_update: u64,
    pub stable_dirty_pages_install: u64,
    pub stable_accessed_pages_install: u64,
    pub stable_dirty_pages_query: u64,
    pub stable_accessed_pages_query: u64,
    /// Instructions per newly dirtied OS page (see [`Host`]).
    pub dirty_page_overhead: u64,
    /// Whether `debug_print` pays `+1 per byte` of its message: only when debug prints are
    /// not rate limited (mainnet application subnets rate limit them; PocketIC does not).
    pub charge_debug_print_bytes: bool,
    /// The canister setting `wasm_memory_limit` (0 = unlimited), here at the default a
    /// canister created without settings gets. Growing the heap past it traps updates,
    /// init, post_upgrade and start with IC0539; queries and pre_upgrade are exempt
    /// (`MemoryUsage::effective_wasm_memory_limit`, rs/embedders/src/wasmtime_embedder/system_api.rs).
    pub wasm_memory_limit: u64,
}

impl Limits {
    /// A 13-node application subnet on mainnet.
    pub const APPLICATION: Limits = Limits {
        max_instructions_per_update: 40_000_000_000,
        max_instructions_per_query: 5_000_000_000,
        max_instructions_per_install: 300_000_000_000,
        max_instructions_per_slice: 2_000_000_000,
        max_instructions_per_inspect_message: 200_000_000,
        stable_dirty_pages_update: 2 * GIB / OS_PAGE_SIZE,
        stable_accessed_pages_update: 2 * GIB / OS_PAGE_SIZE,
        stable_dirty_pages_install: 8 * GIB / OS_PAGE_SIZE,
        stable_accessed_pages_install: 8 * GIB / OS_PAGE_SIZE,
        stable_dirty_pages_query: GIB / OS_PAGE_SIZE,
        stable_accessed_pages_query: GIB / OS_PAGE_SIZE,
        dirty_page_overhead: DIRTY_PAGE_OVERHEAD,
        charge_debug_print_bytes: false,
        wasm_memory_limit: DEFAULT_WASM_MEMORY_LIMIT,
    };

    /// The PocketIC "Benchmarking" application subnet canbench uses: the instruction limits
    /// (message, query call graph, slice, round) are raised to 99,999,999,999,999; the page
    /// limits and the dirty-page overhead stay those of an application subnet, and debug
    /// prints are not rate limited.
    ///
    /// ⚠ The PocketIC sources list the message/without-DTS/round/query-graph/slice limits;
    /// the install_code and inspect_message limits are raised here too for simplicity.
    pub const BENCHMARKING: Limits = Limits {
        max_instructions_per_update: BENCHMARKING_INSTRUCTION_LIMIT,
        max_instructions_per_query: BENCHMARKING_INSTRUCTION_LIMIT,
        max_instructions_per_install: BENCHMARKING_INSTRUCTION_LIMIT,
        max_instructions_per_slice: BENCHMARKING_INSTRUCTION_LIMIT,
        max_instructions_per_inspect_message: BENCHMARKING_INSTRUCTION_LIMIT,
        charge_debug_print_bytes: true,
        ..Limits::APPLICATION
    };
}

/// What one install_code may spend on a system subnet, and in one slice of it
/// (`MAX_INSTRUCTIONS_PER_INSTALL_CODE` and `..._SLICE` of a system subnet, dfinity/ic
/// rs/config/src/subnet_config.rs); an application subnet's are in [`Limits::APPLICATION`]
/// (300B, in 2B slices).
pub const SYSTEM_SUBNET_INSTALL: u64 = 1_000_000_000_000;
pub const SYSTEM_SUBNET_INSTALL_SLICE: u64 = 5_000_000_000;

/// PocketIC's instruction limit on a "Benchmarking" subnet.
pub const BENCHMARKING_INSTRUCTION_LIMIT: u64 = 99_999_999_999_999;

// -------------------------------------------------------------------------------------------
// Cycles
// -------------------------------------------------------------------------------------------

/// Cycles fees of a subnet (`CyclesAccountManagerConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclesFees {
    /// Nodes in the subnet the fees are scaled to.
    pub subnet_size: u64,
    /// The subnet size the fees below are quoted for.
    pub reference_subnet_size: u64,
    pub update_message_execution_fee: u128,
    /// Cycles per 10 instructions, Wasm32.
    pub ten_update_instructions_execution_fee: u128,
    /// Cycles per 10 instructions, Wasm64.
    pub ten_update_instructions_execution_fee_wasm64: u128,
    pub ingress_message_reception_fee: u128,
    pub ingress_byte_reception_fee: u128,
    pub xnet_call_fee: u128,
    pub xnet_byte_transmission_fee: u128,
    /// Cycles per GiB of memory per second (`gib_storage_per_second_fee`, "4 SDR per GiB
    /// per year"), charged on heap, stable memory, globals and the module
    /// (shared/research/upgrades-and-fees.md §5; `rs/config/src/subnet_config.rs` and
    /// `rs/cycles_account_manager`). ⚠ A third-party audit quotes a newer configuration
    /// with 317,500 and a base fee per canister; no `dfinity/ic` config in reach has it.
    pub gib_storage_per_second_fee: u128,
}

impl CyclesFees {
    /// A 13-node application subnet.
    pub const APPLICATION_13: CyclesFees = CyclesFees {
        subnet_size: 13,
        reference_subnet_size: 13,
        update_message_execution_fee: 5_000_000,
        ten_update_instructions_execution_fee: 10,
        ten_update_instructions_execution_fee_wasm64: 20,
        ingress_message_reception_fee: 1_200_000,
        ingress_byte_reception_fee: 2_000,
        xnet_call_fee: 260_000,
        xnet_byte_transmission_fee: 1_000,
        gib_storage_per_second_fee: 127_000,
    };

    /// A 34-node application subnet (the fiduciary subnet's size): the 13-node fees scaled
    /// by 34/13 with the replica's integer `scale_cost`.
    pub const APPLICATION_34: CyclesFees = CyclesFees {
        subnet_size: 34,
        ..CyclesFees::APPLICATION_13
    };

    fn scale(&self, cycles: u128) -> u128 {
        cycles * self.subnet_size as u128 / self.reference_subnet_size as u128
    }

    /// Cycles for `instructions` (multiply before dividing, as the newest replica does).
    pub fn instructions_cost(&self, instructions: u64, wasm64: bool) -> u128 {
        let fee = if wasm64 {
            self.ten_update_instructions_execution_fee_wasm64
        } else {
            self.ten_update_instructions_execution_fee
        };
        self.scale(fee * instructions as u128 / 10)
    }

    /// Cycles charged for a replicated execution that used `instructions`:
    /// `scale(update_message_execution_fee + convert(instructions))`.
    pub fn execution_cost(&self, instructions: u64, wasm64: bool) -> u128 {
        self.scale(self.update_message_execution_fee) + self.instructions_cost(instructions, wasm64)
    }

    /// Storage cycles for keeping `bytes` of memory for `seconds` under `replica`'s rules, as
    /// the replica's `CyclesAccountManager` charges them: a per-day rate
    /// `scale(bytes * fee * 86,400 / 2^30)` (`memory_cost`), plus, when `bytes` is not 0,
    /// `scale(base_per_second_fee * 86,400)` (`canister_base_cost`), then
    /// `rate * seconds / 86,400` (integer divisions, in this order).
    pub fn storage_cost(&self, replica: &Replica, bytes: u64, seconds: u64) -> u128 {
        const DAY: u128 = 86_400;
        let memory =
            self.scale(bytes as u128 * self.gib_storage_per_second_fee * DAY / GIB as u128);
        let base = match bytes {
            0 => 0,
            _ => self.scale(replica.base_per_second_fee * DAY),
        };
        (memory + base) * seconds as u128 / DAY
    }

    /// Cycles for receiving an ingress message of `bytes` bytes.
    pub fn ingress_cost(&self, bytes: u64) -> u128 {
        self.scale(
            self.ingress_message_reception_fee + self.ingress_byte_reception_fee * bytes as u128,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_fee_matches_the_replica_figures() {
        let (f13, f34) = (CyclesFees::APPLICATION_13, CyclesFees::APPLICATION_34);
        let (old, new) = (Replica::R2026_04, Replica::R2026_05);
        let cases: &[(CyclesFees, Replica, u64, u64, u128)] = &[
            // 127,000 per GiB·s at 13 nodes; 127,000 × 34 / 13 = 332,153 (floored) at 34.
            (f13, old, GIB, 1, 127_000),
            (f34, old, GIB, 1, 332_153),
            // A GiB for 30 days on 13 nodes: 127,000 × 2,592,000.
            (f13, old, GIB, 30 * 86_400, 329_184_000_000),
            // Integer divisions in the replica's order: 1 KiB for a second rounds to 0
            // cycles, a day of it is the floored day rate 1,024 × 127,000 × 86,400 / 2^30.
            (f13, old, 1024, 1, 0),
            (f13, old, 1024, 86_400, 10_464),
            // From 2026-05 every canister with memory also pays 10,000 per second: a day
            // of 1 KiB is 10,464 + 864,000,000; 30 days of a GiB 329,184,000,000 +
            // 25,920,000,000; an empty canister pays nothing.
            (f13, new, 1024, 86_400, 864_010_464),
            (f13, new, GIB, 30 * 86_400, 355_104_000_000),
            (f34, new, 0, 86_400, 0),
            // One byte for a day on 34 nodes: memory 127,000 × 86,400 / 2^30 = 10, scaled
            // to 26; the base fee 864,000,000 scaled by 34 / 13 to 2,259,692,307.
            (f34, new, 1, 86_400, 2_259_692_333),
        ];
        for (fees, replica, bytes, seconds, cycles) in cases {
            assert_eq!(
                fees.storage_cost(replica, *bytes, *seconds),
                *cycles,
                "{} nodes, {}, {bytes} bytes, {seconds} s",
                fees.subnet_size,
                replica.name
            );
        }
        assert_eq!(CyclesFees::APPLICATION_34.ingress_cost(0), 3_138_461);
    }
    use wasmparser::{BlockType, MemArg};

    #[test]
    fn operator_table_spot_checks() {
        let m = MemArg {
            align: 0,
            max_align: 0,
            offset: 0,
            memory: 0,
        };
        let cases: &[(Operator, u64, u64)] = &[
            // (operator, wasm32 cost, wasm64 cost)
            (
                Operator::Block {
                    blockty: BlockType::Empty,
                },
                0,
                0,
            ),
            (Operator::End, 0, 0),
            (Operator::I32Const { value: 7 }, 1, 1),
            (Operator::I64DivU, 10, 10),
            (Operator::F64Min, 18, 18),
            (Operator::F64Sqrt, 8, 8),
            (Operator::F32ConvertI64U, 16, 16),
            (Operator::I32TruncSatF64S, 20, 20),
            (Operator::I64Load { memarg: m }, 1, 2),
            (Operator::V128Store { memarg: m }, 1, 2),
            (Operator::GlobalGet { global_index: 0 }, 2, 2),
            (Operator::Call { function_index: 0 }, 5, 5),
            (
                Operator::CallIndirect {
                    type_index: 0,
                    table_index: 0,
                },
                10,
                10,
            ),
            (Operator::RefFunc { function_index: 0 }, 130, 130),
            (Operator::MemoryGrow { mem: 0 }, 300, 300),
            (
                Operator::MemoryCopy {
                    dst_mem: 0,
                    src_mem: 0,
                },
                100,
                100,
            ),
            (Operator::F64x2Sqrt, 14, 14),
            (Operator::I64x2Mul, 4, 4),
            (Operator::I8x16LeU, 1, 1),
            (Operator::I32AtomicLoad { memarg: m }, 1, 1),
        ];
        for (op, c32, c64) in cases {
            assert_eq!(instruction_cost(op, false), *c32, "{op:?} wasm32");
            assert_eq!(instruction_cost(op, true), *c64, "{op:?} wasm64");
        }
    }

    #[test]
    fn br_table_costs_two_whatever_its_size() {
        let wasm = wat::parse_str(
            "(module (func (param i32) block local.get 0 br_table 0 0 0 0 0 0 0 0 end))",
        )
        .unwrap();
        let mut seen = false;
        for payload in wasmparser::Parser::new(0).parse_all(&wasm) {
            if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
                for op in body.get_operators_reader().unwrap() {
                    let op = op.unwrap();
                    if let Operator::BrTable { .. } = op {
                        assert_eq!(instruction_cost(&op, false), 2);
                        seen = true;
                    }
                }
            }
        }
        assert!(seen);
    }

    #[test]
    fn api_fees_charge_base_plus_bytes() {
        let fee = |name| system_api_fee(name).unwrap();
        // A reply of 100 bytes leaves the sandbox: 500 + 50 per byte.
        assert_eq!(fee("msg_reply_data_append").charge(100), 5_500);
        // A copy into the canister: 500 + 1 per byte.
        assert_eq!(fee("msg_arg_data_copy").charge(10), 510);
        // No per-byte part: the size does not matter.
        assert_eq!(fee("performance_counter").charge(1_000), 200);
        // A stable write of a 4 KiB page, before its dirty-page charge.
        assert_eq!(fee("stable64_write").charge(4096), 20 + 4096);
        // A huge size saturates instead of wrapping around to a small charge.
        assert_eq!(fee("msg_reply_data_append").charge(u64::MAX), u64::MAX);
        assert_eq!(system_api_fee("nope"), None);
        // No duplicates in the table: a lookup finds the only entry.
        let mut names: Vec<_> = SYSTEM_API_FEES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SYSTEM_API_FEES.len());
    }

    #[test]
    fn logging_is_bounded_by_the_buffer_and_the_space_left() {
        // 2 per byte allocated, 50 per byte that fits in the log.
        assert_eq!(logging_charge(10, 10), 2 * 10 + 50 * 10);
        // Only the 40 bytes that still fit are transmitted.
        assert_eq!(logging_charge(100, 40), 2 * 100 + 50 * 40);
        // A message longer than the buffer allocates at most the buffer.
        assert_eq!(logging_charge(10_000, 0), 2 * 4096);
    }

    #[test]
    fn cycles_for_executions_and_ingress() {
        let fees = CyclesFees::APPLICATION_13;
        // Every replicated message pays the base fee, even with no instructions.
        assert_eq!(fees.execution_cost(0, false), 5_000_000);
        // 1 cycle per instruction in wasm32, 2 in wasm64.
        assert_eq!(fees.execution_cost(1_000, false), 5_001_000);
        assert_eq!(fees.execution_cost(1_000, true), 5_002_000);
        // Multiplied before dividing: 5 instructions cost 5 cycles, not 5 / 10 * 10 = 0.
        assert_eq!(fees.instructions_cost(5, false), 5);
        assert_eq!(fees.ingress_cost(0), 1_200_000);
        assert_eq!(fees.ingress_cost(100), 1_200_000 + 100 * 2_000);
        // A larger subnet scales every fee by its size (34 / 13 here), rounding down.
        let big = CyclesFees {
            subnet_size: 34,
            ..fees
        };
        assert_eq!(big.ingress_cost(0), 1_200_000 * 34 / 13);
        assert_eq!(big.instructions_cost(13_000, false), 34_000);
    }
}
